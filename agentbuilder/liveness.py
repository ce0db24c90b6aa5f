"""Leases: no row outlives, in a working state, the process that was working on it.

A process holds a lease on each row it works on (a run it streams, a document it
ingests); one thread per process renews them together, every LIVENESS_SECONDS / 6, with
one UPDATE per kind of row. The same thread, in every process, closes the rows whose
lease ran out: their process was killed, or lost the database. A lease runs for two
thirds of LIVENESS_SECONDS, so a row whose process died is closed within LIVENESS_SECONDS
by any other live process, or by its own restart.

Leases, not a heartbeat row per process: each app keeps its rows' liveness on the rows
themselves (retrieval never needs the agents app's tables), the sweep is one indexed
UPDATE, and an idle process writes nothing.

The thread runs in the processes that serve and work, from their start-up: a server's at
the ASGI lifespan's start-up (agentbuilder.asgi), a Celery worker's when its pool's
process starts (agentbuilder.celery), so a restart with no traffic still closes what the
process it replaced left. Not at import: a gunicorn master must not open database
connections that its forked workers would share. Without a start-up event (the lifespan
off, WSGI) a server starts it at its first request. Elsewhere (a management command, the
test runner) leases are taken but nobody renews or sweeps: `tick()` is one pass, for
tests.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now

logger = logging.getLogger(__name__)


@dataclass
class _Kind:
    renew: Callable[[Collection[Any]], object]
    sweep: Callable[[], object]
    held: set[Any] = field(default_factory=set)


_kinds: dict[str, _Kind] = {}
_lock = threading.Lock()
# SimpleQueue: put() is safe from weakref callbacks and __del__, which may run anywhere.
_wakeups: queue.SimpleQueue[None] = queue.SimpleQueue()
_thread: threading.Thread | None = None


def register(
    name: str, *, renew: Callable[[Collection[Any]], object], sweep: Callable[[], object]
) -> None:
    """A kind of leased row: `renew(keys)` extends the leases of this process's rows,
    `sweep()` closes every row whose lease ran out (and anything else overdue)."""
    _kinds[name] = _Kind(renew, sweep)


def hold(name: str, key: Any) -> None:
    """This process works on the row `key`: renew its lease until `release`."""
    with _lock:
        _kinds[name].held.add(key)


def release(name: str, key: Any) -> None:
    with _lock:
        _kinds[name].held.discard(key)


def held(name: str) -> set[Any]:
    with _lock:
        return set(_kinds[name].held)


def lease_seconds() -> float:
    return float(settings.LIVENESS_SECONDS) * 2 / 3


def interval_seconds() -> float:
    return float(settings.LIVENESS_SECONDS) / 6


def lease_expiry() -> ExpressionWrapper:
    """The end of a lease taken now, in the database's clock (hosts' clocks may differ)."""
    return _lease_expiry(lease_seconds())


@functools.lru_cache(maxsize=8)
def _lease_expiry(seconds: float) -> ExpressionWrapper:
    # Built once per lease length: expressions are copied, never changed, when compiled.
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def wake() -> None:
    """Sweep now rather than at the next interval. Safe from any thread or finalizer."""
    _wakeups.put(None)


def tick() -> None:
    """One pass: renew this process's leases, then sweep. Errors are logged, never raised:
    the next pass tries again."""
    for name, kind in list(_kinds.items()):
        for step, call in (("renew", _renewal(name, kind)), ("sweep", kind.sweep)):
            try:
                call()
            except Exception:
                logger.exception("liveness: %s of %s failed", step, name)


def _renewal(name: str, kind: _Kind) -> Callable[[], object]:
    def renew() -> object:
        keys = held(name)
        return kind.renew(keys) if keys else None

    return renew


def ensure_started() -> None:
    """Start this process's liveness thread unless it runs already (or LIVENESS_THREAD is
    off)."""
    global _thread
    if not settings.LIVENESS_THREAD or (_thread is not None and _thread.is_alive()):
        return
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _thread = threading.Thread(target=_loop, name="liveness", daemon=True)
        _thread.start()


def start_on_request(**kwargs: Any) -> None:
    """A `request_started` receiver: a server process, restarted too, sweeps from its first
    request on."""
    ensure_started()


def _loop() -> None:
    while True:
        tick()
        for connection in connections.all(initialized_only=True):
            try:
                connection.close()  # back to the pool between passes
            except Exception:
                logger.exception("liveness: closing a connection failed")
        try:
            _wakeups.get(timeout=interval_seconds())
            while True:  # one pass answers every wake-up queued so far
                _wakeups.get_nowait()
        except queue.Empty:
            pass


def _forget_after_fork() -> None:
    # The parent's thread and leases stay the parent's: a child starts with none.
    global _thread, _lock, _wakeups
    _thread = None
    _lock = threading.Lock()  # another thread may have held it at the fork
    _wakeups = queue.SimpleQueue()
    for kind in _kinds.values():
        kind.held = set()


os.register_at_fork(after_in_child=_forget_after_fork)
