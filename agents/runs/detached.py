"""The process's runner of runs that no request consumes: background runs
(agents.runs.background), in a Celery worker or, in the embedded mode, in the server.

A request's tasks live in the request's thread-sensitive context (agentbuilder.
request_threads): once the request has answered, that context exits, and a run still
consumed from it can no longer reach the database (asgiref refuses: "ThreadSensitiveContext
has exited"). Here a run is consumed in the runner: one thread with an event loop of its
own, in which each run is taken and consumed to its end by a task started in a fresh
context, with a database thread of the runner's (docs/architecture.md#decisions: in the
embedded mode a thread pool stands in for the workers). At most DETACHED_RUNS_CONCURRENCY
run at once; the others wait their turn, still `queued` and cancelable as such. Once the
process is shutting down (agentbuilder.shutdown) it takes none of them: they stay queued,
and a live process's queue sweep hands them over again (agents.runs.background).

Whatever ends a run, it is recorded by the one recorded path (agents.runs.stream): its end,
`canceled` by a cancel, `failed` when it breaks; and if its task dies or its loop hangs,
nothing beats for it and the sweep closes it `interrupted`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import aclosing

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings

from agentbuilder import shutdown
from agentbuilder.db import in_db
from agents.runs.start import Invocation
from agents.runs.stream import recorded_events

logger = logging.getLogger(__name__)

# Takes the run for this process (in a database thread of the runner's): its invocation,
# or None when there is nothing to run (another process took it, it was canceled).
Claim = Callable[[], Invocation | None]


class Runner:
    """A thread running an event loop, consuming the runs handed to it."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("DETACHED_RUNS_CONCURRENCY must be at least 1.")
        self.concurrency = concurrency
        self.loop = asyncio.new_event_loop()
        self.tasks: set[asyncio.Task[None]] = set()
        # Run id → its end: a run handed over twice (its message delivered again, the
        # queue's sweep) waits once.
        self.pending: dict[uuid.UUID, Future[None]] = {}
        self._pending_lock = threading.Lock()
        started: Future[None] = Future()
        self.thread = threading.Thread(
            target=self._serve, args=(started,), name="detached-runs", daemon=True
        )
        self.thread.start()
        started.result()

    def _serve(self, started: Future[None]) -> None:
        asyncio.set_event_loop(self.loop)
        # One database thread a slot, made when first used: a run keeps its thread for
        # all its sync calls, as a request does.
        self.slots: asyncio.Queue[ThreadPoolExecutor] = asyncio.Queue()
        for n in range(self.concurrency):
            self.slots.put_nowait(
                ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"detached-run-{n}")
            )
        started.set_result(None)
        self.loop.run_forever()

    def submit(self, run_id: uuid.UUID, claim: Claim) -> Future[None]:
        """Take the run with `claim` once a slot is free, and consume it to its end here.
        From any thread; done when the run is over (or there was nothing to run)."""
        with self._pending_lock:
            done = self.pending.get(run_id)
            if done is not None:
                return done
            done = self.pending[run_id] = Future()
        self.loop.call_soon_threadsafe(self._start, run_id, claim, done)
        return done

    def _start(self, run_id: uuid.UUID, claim: Claim, done: Future[None]) -> None:
        # A fresh context: nothing of the request or task that handed it over (a request's
        # thread-sensitive context above all) comes along.
        task = self.loop.create_task(self._own(run_id, claim, done), context=contextvars.Context())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _own(self, run_id: uuid.UUID, claim: Claim, done: Future[None]) -> None:
        try:
            executor = await self.slots.get()
            try:
                if shutdown.stopping():  # left queued: another process takes it
                    return
                async with ThreadSensitiveContext(executor=executor):
                    invocation = await in_db(claim)()
                    if invocation is not None:
                        async with aclosing(recorded_events(invocation)) as events:
                            async for _ in events:  # recorded and kept as they pass
                                pass
            except Exception:
                logger.exception("run %s broke", run_id)  # recorded by its path
            finally:
                self.slots.put_nowait(executor)
        finally:
            with self._pending_lock:
                self.pending.pop(run_id, None)
            done.set_result(None)


_runner: Runner | None = None
_lock = threading.Lock()


def runner() -> Runner:
    """The process's runner, started on first use."""
    global _runner
    if _runner is None or not _runner.thread.is_alive():
        with _lock:
            if _runner is None or not _runner.thread.is_alive():
                _runner = Runner(int(settings.DETACHED_RUNS_CONCURRENCY))
    return _runner


def _forget_after_fork() -> None:
    global _runner, _lock
    _runner = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
