"""Each run's events, kept (RunEvent) as the run goes and followed from any process.

Writing: the recorder adds every event to the run's EventLog; a flush writes what is
pending at most every FLUSH_SECONDS while the run is live (one INSERT of many rows, never
a statement per text delta), and the rest goes in the run's final statement
(agents.runs.record), so a run shorter than that writes no statement of its own for them.

Following: `run_events_follow(run_id, after=N)` replays the stored events from index N,
then follows the new ones (agents.runs.event_feed polls for every follower of the process
at once) until the run has ended, whatever process runs it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from typing import Any

from django.db import connection

from agentbuilder.db import in_db
from agents.models import RunEvent, RunStatus
from agents.runs.event_codec import event_from_json, event_json, event_type
from agents.runs.event_feed import Read, run_read_next, runs_read
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.2
TERMINAL_TYPES = frozenset({event_type(ResponseCompleted), event_type(ResponseFailed)})


@functools.cache
def insert_sql() -> str:
    """The INSERT of a batch of a run's events: `%(events)s`, a JSON array, stored from
    index `%(first)s` on. A batch written already (its answer lost) is not written twice."""
    quote = connection.ops.quote_name
    table = quote(RunEvent._meta.db_table)
    column = {f.name: quote(str(f.column)) for f in RunEvent._meta.concrete_fields}
    run, index, event = column["run"], column["index"], column["event"]
    # Names from the model's metadata; every value is a parameter.
    return f"""
        INSERT INTO {table} ({run}, {index}, {event})
        SELECT %(id)s, %(first)s + e.n - 1, e.event
        FROM jsonb_array_elements(%(events)s::jsonb) WITH ORDINALITY AS e(event, n)
        ON CONFLICT ({run}, {index}) DO NOTHING
    """  # noqa: S608


class EventLog:
    """A run's events on their way to the database. Created and fed on the run's loop."""

    def __init__(self, run_id: uuid.UUID, first: int = 0) -> None:
        """`first`: the index of its first event (a resumed run's come after its own)."""
        self.run_id = run_id
        self.pending: list[dict[str, Any]] = []
        self.written = first  # events stored, all before the pending ones
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None
        self._closed = False

    def add(self, event: Event) -> None:
        self.pending.append(event_json(event))
        if not self._closed and self._timer is None and self._flushing is None:
            self._timer = self._loop.call_later(FLUSH_SECONDS, self._flush)

    def _flush(self) -> None:
        # The timer's callback runs in the context it was set in, the run's, so the
        # flush's database hop is the run's too (agentbuilder.db.in_db).
        self._timer = None
        self._flushing = self._loop.create_task(self._write(len(self.pending)))

    async def _write(self, count: int) -> None:
        try:
            await in_db(self._insert)(self.pending[:count], self.written)
            del self.pending[:count]
            self.written += count
        except Exception:  # the final statement writes them with the rest
            logger.exception("run %s: writing %s event(s) failed", self.run_id, count)
        finally:
            self._flushing = None
        if self.pending and not self._closed:
            self._timer = self._loop.call_later(FLUSH_SECONDS, self._flush)

    def _insert(self, events: list[dict[str, Any]], first: int) -> None:
        params: dict[str, Any] = {"id": self.run_id, "first": first, "events": _dumps(events)}
        with connection.cursor() as cursor:
            cursor.execute(insert_sql(), params)

    async def settle(self) -> None:
        """No more flushes: wait for one under way. What is pending then goes in the final
        statement (`final_params`)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing is not None:
            await asyncio.wait({self._flushing})

    def final_params(self) -> dict[str, Any]:
        return {"events": _dumps(self.pending), "first": self.written}


def _dumps(events: list[dict[str, Any]]) -> str:
    return json.dumps(events, ensure_ascii=False)


# ---------------------------------------------------------------- following


class RunFollower:
    """Async iterator of a run's (index, event) from index `after`: the stored ones, then
    the new ones as they are stored, until the run has ended and all of its are read.
    Then `status` and `error` are the run's end (a canceled or interrupted run ends without
    a terminal event; its status says how it ended).

    The replay is a read of its own; after it, the follower waits on this process's one
    poller of followed runs (agents.runs.event_feed)."""

    def __init__(self, run_id: uuid.UUID, after: int = 0, replay: Read | None = None) -> None:
        self.run_id = run_id
        self.next = after
        self.status: str = RunStatus.IN_PROGRESS
        self.error: dict[str, Any] | None = None
        self._ready: list[tuple[int, Event]] = []
        self._ended = False
        self._replay = replay  # the first read, made already (in its caller's hop)
        self._replayed = False

    def __aiter__(self) -> RunFollower:
        return self

    def take_ready(self) -> list[tuple[int, Event]]:
        """The events read already and not yet taken (no wait): a stream writes them in
        one chunk with the one `__anext__` gave, not one write each."""
        ready, self._ready = self._ready, []
        return ready

    async def __anext__(self) -> tuple[int, Event]:
        while not self._ready:
            if self._ended:
                raise StopAsyncIteration
            if self._replayed:
                read = await run_read_next(self.run_id, self.next)
            elif self._replay is not None:
                read, self._replayed = self._replay, True
            else:
                read = (await in_db(runs_read)({self.run_id: self.next}))[self.run_id]
                self._replayed = True
            self._ready = read.events
            if read.events:
                self.next = read.events[-1][0] + 1
            if read.ended:
                # Read in the same statement as its events: a run's end is stored with its
                # last events, so the events read with an ended status are all of them.
                self.status, self.error, self._ended = read.status, read.error, True
        return self._ready.pop(0)


def run_events_follow(run_id: uuid.UUID, after: int = 0, replay: Read | None = None) -> RunFollower:
    """The run's events from index `after`, replayed then followed live to the run's end,
    from any process (see RunFollower for how it ends). `replay`: the run as `run_replay`
    read it from `after`, in a database hop the caller made anyway."""
    return RunFollower(run_id, after, replay)


def run_replay(run_id: uuid.UUID, after: int) -> Read:
    """The run's status and its stored events from index `after` (one statement)."""
    return runs_read({run_id: after})[run_id]


def run_event_at(run_id: uuid.UUID, index: int) -> Event | None:
    """The run's stored event of that index, if it is stored."""
    data = RunEvent.objects.filter(run_id=run_id, index=index).values_list("event", flat=True)
    found = data.first()
    return None if found is None else event_from_json(found)


def run_terminal_stored(run_id: uuid.UUID) -> bool:
    """Whether the run's last stored event is its terminal one (a run canceled or
    interrupted stores none)."""
    last = RunEvent.objects.filter(run_id=run_id).order_by("-index").values_list("event", flat=True)
    found = last.first()
    return found is not None and found.get("type") in TERMINAL_TYPES
