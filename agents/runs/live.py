"""This process's live runs: each one's heartbeat, beaten by the event loop that consumes
it, and the cancels that reach it from any process.

- **Heartbeat.** A run is live from the moment its events start being consumed (a
  request's stream, the detached runner, agents.runs.detached) until it is recorded. A
  timer on the event loop consuming it stamps its beat while that loop runs and still
  holds the run's consumer. The liveness thread renews the lease of a started run only if
  its beat is fresh (agents.runs.leases), so a run whose loop is blocked (deadlocked) or
  gone, whose consumer was dropped, or whose end could not be written, is closed
  `interrupted` by the sweep within LIVENESS_SECONDS though its process lives on. The
  renewal stays one UPDATE per process and pass; what the beat adds is that the code
  running the run vouches for it, not the process.
- **Cancels.** `run_cancel` sets the run's `cancel_requested_at`, and signals the run at
  once if this process runs it. Each serving process (LIVENESS_THREAD) has a watcher thread
  that, while it runs any run, polls every CANCEL_POLL_SECONDS for flags on its runs (one
  indexed statement), and has the run's loop cancel it: the run ends `canceled` as if its
  client had gone. Polling rather than LISTEN/NOTIFY: it needs no connection held open
  outside the pool, works through a transaction-pooling proxy (PgBouncer drops LISTEN),
  cannot miss a notification while reconnecting, and costs an idle process nothing; the
  price, a few index lookups a second while runs are live, is small beside the runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Collection

from django.conf import settings
from django.db import connections
from django.db.models import F
from django.db.models.functions import Coalesce, Now

from agentbuilder import liveness
from agentbuilder.users import User
from agents.models import Run, RunStatus

logger = logging.getLogger(__name__)

# A cancel reaches a run within this (and a statement's time) wherever it runs: the 2 s
# docs/api.md#run-status promises, with room for a loaded machine.
CANCEL_POLL_SECONDS = 0.25


def beat_seconds() -> float:
    """Twice per renewal interval: a renewal sees a beat at most this old from a live run."""
    return liveness.interval_seconds() / 2


class LiveRun:
    """A run consumed on `loop`. `on_cancel` runs in that loop; a bound method is held
    weakly, so a consumer that is dropped without closing the run (nothing references it
    any more) is collected, and closed by asyncio's finalizer, rather than kept alive and
    vouched for here."""

    def __init__(
        self,
        run_id: uuid.UUID,
        loop: asyncio.AbstractEventLoop,
        on_cancel: Callable[[], None],
        on_interrupt: Callable[[], None] | None = None,
    ) -> None:
        self.run_id, self.loop = run_id, loop
        self._on_cancel = _held(on_cancel)
        self._on_interrupt = _held(on_interrupt or on_cancel)
        self.beat = time.monotonic()
        self.canceling = False
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._beat()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _beat(self) -> None:
        # The loop runs this timer: it is not blocked, and it still holds the run's consumer.
        if self._on_cancel() is None:  # the consumer is gone: nothing vouches for the run
            self._timer = None
            return
        self.beat = time.monotonic()
        self._timer = self.loop.call_later(beat_seconds(), self._beat)

    def cancel(self) -> None:
        """In the run's loop: ask it to end `canceled` (once)."""
        on_cancel = self._on_cancel()
        if self.canceling or on_cancel is None:
            return
        self.canceling = True
        on_cancel()

    def cancel_threadsafe(self) -> None:
        # A closed loop refuses: the run's lease then runs out and the sweep closes it.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.cancel)

    def interrupt(self) -> None:
        """In the run's loop: end it `interrupted` (its process is shutting down), once."""
        on_interrupt = self._on_interrupt()
        if self.canceling or on_interrupt is None:
            return
        self.canceling = True
        on_interrupt()

    def interrupt_threadsafe(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.interrupt)


def _held(callback: Callable[[], None]) -> Callable[[], Callable[[], None] | None]:
    # A bound method weakly (see LiveRun), anything else as it is.
    if inspect.ismethod(callback):
        return weakref.WeakMethod(callback)
    return lambda: callback


_live: dict[uuid.UUID, LiveRun] = {}
_lock = threading.Lock()
_wake = threading.Event()
_watcher: threading.Thread | None = None


def run_live(
    run_id: uuid.UUID,
    on_cancel: Callable[[], None],
    on_interrupt: Callable[[], None] | None = None,
) -> LiveRun:
    """The run is consumed on this loop from now on: beat for it while the loop runs, and
    call `on_cancel` (in this loop) when the run is to be canceled, `on_interrupt` when its
    process shuts down (`runs_interrupt`). A later call for the same run (the consumer that
    takes over from the one that queued it) replaces the earlier."""
    live = LiveRun(run_id, asyncio.get_running_loop(), on_cancel, on_interrupt)
    with _lock:
        before = _live.get(run_id)
        _live[run_id] = live
    if before is not None:
        before.stop()
        live.canceling = before.canceling
    live.start()
    _watch()
    return live


def run_gone(live: LiveRun) -> None:
    """The run is recorded (or given up): no more beats, no more cancels."""
    live.stop()
    with _lock:
        if _live.get(live.run_id) is live:
            del _live[live.run_id]


def beating(run_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `run_ids` whose consumer beat within two renewal intervals (a third of
    LIVENESS_SECONDS). One interval was too tight: on a loaded machine a live loop's beat
    can come late, and runs whose loops were alive lost their leases. Two still close a run
    whose loop stopped within LIVENESS_SECONDS of its last beat: this window, then the
    lease (two thirds of it) that the last renewal granted."""
    fresh = time.monotonic() - 2 * liveness.interval_seconds()
    with _lock:
        return {
            run_id
            for run_id in run_ids
            if (live := _live.get(run_id)) is not None and live.beat >= fresh
        }


def live_here(run_id: uuid.UUID) -> bool:
    with _lock:
        return run_id in _live


def run_cancel(*, run_id: uuid.UUID, by: User) -> bool:
    """Ask the run to end `canceled`, wherever it runs: within CANCEL_POLL_SECONDS and a
    statement's time in another serving process, at once in this one. False if the run is
    not in progress (ended, or unknown). Who may cancel is the caller's check."""
    asked = Run.objects.filter(pk=run_id, status=RunStatus.IN_PROGRESS).update(
        cancel_requested_at=Coalesce(F("cancel_requested_at"), Now())
    )
    if not asked:
        return False
    logger.info("run %s: cancel requested by %s", run_id, by)
    with _lock:
        live = _live.get(run_id)
    if live is not None:
        live.cancel_threadsafe()
    return True


def runs_interrupt() -> int:
    """End every run this process runs `failed` / `interrupted`: its shutdown's grace is
    over (agentbuilder.shutdown). How many were asked."""
    with _lock:
        running = list(_live.values())
    for live in running:
        live.interrupt_threadsafe()
    if running:
        logger.warning("shutting down: %s run(s) still running end interrupted", len(running))
    return len(running)


# ---------------------------------------------------------------- the watcher


def _watch() -> None:
    """Wake the watcher (started on first use in a serving process)."""
    global _watcher
    if not settings.LIVENESS_THREAD:
        return  # the test runner, a management command: cancels reach only this process
    if _watcher is None or not _watcher.is_alive():
        with _lock:
            if _watcher is None or not _watcher.is_alive():
                _watcher = threading.Thread(target=_watch_loop, name="run-cancels", daemon=True)
                _watcher.start()
    _wake.set()


def _watch_loop() -> None:
    while True:
        with _lock:
            watched = [run_id for run_id, live in _live.items() if not live.canceling]
        if not watched:
            _close_connections()  # idle: hold no connection
            _wake.wait()
            _wake.clear()
            continue
        try:
            flagged = set(
                Run.objects.filter(pk__in=watched, cancel_requested_at__isnull=False).values_list(
                    "pk", flat=True
                )
            )
        except Exception:
            logger.exception("run cancels: polling failed")
            _close_connections()
            flagged = set()
        for run_id in flagged:
            with _lock:
                live = _live.get(run_id)
            if live is not None:
                live.cancel_threadsafe()
        time.sleep(CANCEL_POLL_SECONDS)


def _close_connections() -> None:
    for connection in connections.all(initialized_only=True):
        try:
            connection.close()  # back to the pool
        except Exception:
            logger.exception("run cancels: closing a connection failed")


def _forget_after_fork() -> None:
    # The parent's runs and watcher stay the parent's.
    global _watcher, _lock, _wake
    _watcher = None
    _lock = threading.Lock()
    _wake = threading.Event()
    _live.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
