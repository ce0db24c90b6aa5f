"""Runs that go on without their request (an A2A send that returns at once), owned by the
process rather than by the request.

A request's tasks live in the request's thread-sensitive context (agentbuilder.
request_threads): once the request has answered, that context exits, and a run still
consumed from it can no longer reach the database (asgiref refuses: "ThreadSensitiveContext
has exited"), so it was never recorded and stayed `in_progress`. Here a run is handed to
the process's runner: one thread with an event loop of its own, in which each run is
consumed to its end by a task started in a fresh context, with a database thread of the
runner's (docs/architecture.md#decisions: in the embedded mode a thread pool stands in for the
workers). At most DETACHED_RUNS_CONCURRENCY run at once; the others wait their turn,
beating (agents.runs.live) so their leases hold, cancelable.

Whatever ends a detached run, it is recorded by the one recorded path (agents.runs.stream):
its end, `canceled` by a cancel, `failed` when it breaks; and if its task dies or its loop
hangs, nothing beats for it and the sweep closes it `interrupted`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import aclosing

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings

from agentbuilder.db import in_db
from agents.runs import leases, live
from agents.runs.start import Invocation
from agents.runs.stream import recorded_events

logger = logging.getLogger(__name__)


class Runner:
    """A thread running an event loop, consuming the runs handed to it."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("DETACHED_RUNS_CONCURRENCY must be at least 1.")
        self.concurrency = concurrency
        self.loop = asyncio.new_event_loop()
        self.tasks: set[asyncio.Task[None]] = set()
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

    def submit(self, invocation: Invocation) -> None:
        """Run `invocation` to its end here. From any thread; the run is the runner's from
        now on."""
        leases.run_started(invocation.run_id)  # no request's stream will start it
        self.loop.call_soon_threadsafe(self._start, invocation)

    def _start(self, invocation: Invocation) -> None:
        # A fresh context: nothing of the request that handed it over (its thread-sensitive
        # context above all) comes along.
        task = self.loop.create_task(self._own(invocation), context=contextvars.Context())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _own(self, invocation: Invocation) -> None:
        run_id = invocation.run_id
        task = asyncio.current_task()
        assert task is not None

        def cancel() -> None:
            task.cancel()

        waiting = live.run_live(run_id, cancel)  # until a slot is free
        try:
            executor = await self.slots.get()
        except asyncio.CancelledError:  # canceled while it waited: nothing ran
            live.run_gone(waiting)
            async with ThreadSensitiveContext():
                await in_db(leases.run_close_canceled)(run_id)
            return
        try:
            async with (
                ThreadSensitiveContext(executor=executor),
                aclosing(recorded_events(invocation)) as events,
            ):
                async for _ in events:  # recorded and kept as they pass
                    pass
        except Exception:
            logger.exception("detached run %s broke", run_id)  # recorded by its path
        finally:
            self.slots.put_nowait(executor)


_runner: Runner | None = None
_lock = threading.Lock()


def run_detached(invocation: Invocation) -> None:
    """Hand the run to the process: it goes on after the request has answered."""
    global _runner
    if _runner is None or not _runner.thread.is_alive():
        with _lock:
            if _runner is None or not _runner.thread.is_alive():
                _runner = Runner(int(settings.DETACHED_RUNS_CONCURRENCY))
    _runner.submit(invocation)


def _forget_after_fork() -> None:
    global _runner, _lock
    _runner = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
