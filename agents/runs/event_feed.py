"""The runs' stored events as this process's followers read them (agents.runs.event_log's
RunFollower): one statement for every run followed here, every FOLLOW_POLL_SECONDS.

A follower's first read (the replay) is a statement of its own; after that it waits here,
and one thread reads, in one statement per tick, each followed run's status and the events
stored since the earliest index any of its followers waits for, then hands each follower
what is its own on the follower's loop. So the database sees one statement per tick and
process however many clients follow however many runs (a poll per follower was three
times the CPU of the same streams served directly, 500 followers at once:
bench/run_events_follow.py).

Polling rather than LISTEN/NOTIFY, for agents.runs.live's reasons: no connection held open
outside the pool, it works through a transaction-pooling proxy (PgBouncer drops LISTEN),
nothing is missed while reconnecting, and an idle process costs nothing. The price is a
tick's delay (at most FOLLOW_POLL_SECONDS after the run's writer flushed the events).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, connections

from agents.models import RUN_ENDED, Run, RunEvent, RunStatus
from agents.runs.event_codec import event_from_json
from agents.runtime.events import Event

logger = logging.getLogger(__name__)

FOLLOW_POLL_SECONDS = 0.2
NOT_FOUND = {"code": "not_found", "message": "the run does not exist"}


@dataclass(frozen=True)
class Read:
    """A run as one statement saw it: its status and error, and its events from an index
    (all that were stored when the status was read: one snapshot)."""

    status: str
    error: dict[str, Any] | None
    events: list[tuple[int, Event]] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.status in RUN_ENDED


@functools.cache
def _feed_sql() -> str:
    quote = connection.ops.quote_name
    run, event = quote(Run._meta.db_table), quote(RunEvent._meta.db_table)
    column = {f.name: quote(str(f.column)) for f in RunEvent._meta.concrete_fields}
    # Names from the models' metadata; every value is a parameter.
    return f"""
        SELECT f.id, r.status, r.error, e.{column["index"]}, e.{column["event"]}
        FROM unnest(%(ids)s::uuid[], %(after)s::integer[]) AS f(id, after)
        JOIN {run} r ON r.id = f.id
        LEFT JOIN {event} e ON e.{column["run"]} = f.id AND e.{column["index"]} >= f.after
        ORDER BY f.id, e.{column["index"]}
    """  # noqa: S608


def runs_read(after: dict[uuid.UUID, int]) -> dict[uuid.UUID, Read]:
    """In one statement, each run of `after` with its events from that index on. A run that
    does not exist reads as failed (`not_found`)."""
    ids = list(after)
    with connection.cursor() as cursor:
        cursor.execute(_feed_sql(), {"ids": ids, "after": [after[i] for i in ids]})
        rows = cursor.fetchall()
    found: dict[uuid.UUID, Read] = {}
    for run_id, status, error, index, data in rows:
        read = found.get(run_id)
        if read is None:
            read = found[run_id] = Read(status, _json(error))
        if index is not None:
            read.events.append((index, event_from_json(_json(data))))
    return {i: found.get(i) or Read(RunStatus.FAILED, NOT_FOUND) for i in ids}


def _json(value: Any) -> Any:
    # Django has psycopg hand JSON over as text (JSONField decodes it itself).
    return json.loads(value) if isinstance(value, str) else value


# ---------------------------------------------------------------- the one poller


@dataclass(eq=False)
class _Waiter:
    run_id: uuid.UUID
    after: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Read]


_waiting: set[_Waiter] = set()
_lock = threading.Lock()
_wake = threading.Event()
_poller: threading.Thread | None = None


async def run_read_next(run_id: uuid.UUID, after: int) -> Read:
    """The run's status and its events from index `after`, as soon as a tick finds any or
    finds the run ended."""
    loop = asyncio.get_running_loop()
    waiter = _Waiter(run_id, after, loop, loop.create_future())
    with _lock:
        _waiting.add(waiter)
    _start()
    try:
        return await waiter.future
    finally:
        with _lock:
            _waiting.discard(waiter)


def _start() -> None:
    global _poller
    if _poller is None or not _poller.is_alive():
        with _lock:
            if _poller is None or not _poller.is_alive():
                _poller = threading.Thread(target=_poll_loop, name="run-events", daemon=True)
                _poller.start()
    _wake.set()


def _poll_loop() -> None:
    while True:
        with _lock:
            waiting = [w for w in _waiting if not w.future.done()]
        if not waiting:
            _close_connections()  # idle: hold no connection
            _wake.wait()
            _wake.clear()
            continue
        _tick(waiting)
        time.sleep(FOLLOW_POLL_SECONDS)


def _tick(waiting: list[_Waiter]) -> None:
    after: dict[uuid.UUID, int] = {}
    for w in waiting:
        after[w.run_id] = min(after.get(w.run_id, w.after), w.after)
    try:
        reads = runs_read(after)
    except Exception:
        logger.exception("run events: polling failed")
        _close_connections()
        return
    answers: dict[asyncio.AbstractEventLoop, list[tuple[_Waiter, Read]]] = {}
    for w in waiting:
        read = reads[w.run_id]
        events = [pair for pair in read.events if pair[0] >= w.after]
        if events or read.ended:
            answers.setdefault(w.loop, []).append((w, Read(read.status, read.error, events)))
    for loop, answered in answers.items():
        # One wake-up of each loop per tick, not one per follower.
        with contextlib.suppress(RuntimeError):  # a closed loop: its followers are gone
            loop.call_soon_threadsafe(_answer, answered)


def _answer(answered: list[tuple[_Waiter, Read]]) -> None:
    for waiter, read in answered:
        if not waiter.future.done():  # not cancelled (its client left) meanwhile
            waiter.future.set_result(read)


def _close_connections() -> None:
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()  # back to the pool
        except Exception:
            logger.exception("run events: closing a connection failed")


def _forget_after_fork() -> None:
    # The parent's followers and poller stay the parent's.
    global _poller, _lock, _wake
    _poller = None
    _lock = threading.Lock()
    _wake = threading.Event()
    _waiting.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
