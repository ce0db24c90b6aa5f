"""The A2A runs of this process, each consumed in an asyncio task of its own so that
`tasks/cancel` can stop it.

A run's events go through the one recorded path (agents.runs.stream.recorded_events) in a
worker task and reach the request through a queue, one at a time. Canceling the worker is
what a client hanging up does to any stream: the runtime stops where it waits, and the run
is recorded `canceled`. The request then ends with a `canceled` update.

Scope: a run can be canceled by a request that reaches the process running it. With
several server processes, a cancel that reaches another one is refused (-32002) with that
reason: the run record is the only state the processes share, and a run's own end
overwrites whatever else wrote to it (agents.runs.record).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing

from agents.protocols.a2a.encoder import Canceled, Update
from agents.runs.start import Invocation
from agents.runs.stream import recorded_events

_running: dict[uuid.UUID, RunningTask] = {}


class RunningTask:
    """A run started for an A2A task; iterate it for its events (then Canceled, if it was)."""

    def __init__(self, invocation: Invocation) -> None:
        self.run_id = invocation.run_id
        self.canceled = False
        self._queue: asyncio.Queue[Update | None] = asyncio.Queue()
        self._recorded = recorded_events(invocation)
        self._drain: asyncio.Task[None] | None = None  # see detach
        _running[self.run_id] = self
        self._worker = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        try:
            async with aclosing(self._recorded) as events:
                async for event in events:
                    self._queue.put_nowait(event)
                    # In step with the request: the run goes on (and records its end) once
                    # the request has encoded this event, so an encoding that breaks is
                    # the run's failure, as on every other protocol's stream.
                    await self._queue.join()
        except asyncio.CancelledError:
            if self.canceled:  # by tasks/cancel: the run is recorded canceled, say so
                self._queue.put_nowait(Canceled())
            else:
                raise
        finally:
            _running.pop(self.run_id, None)
            self._queue.put_nowait(None)

    async def events(self, keepalive: float | None = None) -> AsyncGenerator[Update | None, None]:
        """The run's updates; with `keepalive`, None each time it is silent that long.
        Closing this early (the client left) cancels the run."""
        try:
            while True:
                try:
                    async with asyncio.timeout(keepalive):
                        update = await self._queue.get()
                except TimeoutError:
                    yield None
                    continue
                if update is None:
                    return
                yield update
                self._queue.task_done()
        finally:
            if not self._worker.done():
                self._worker.cancel()
                # Shielded: the request's own cancellation must not cut the run's record.
                await asyncio.shield(asyncio.wait({self._worker}))

    def detach(self) -> None:
        """Let the run go on without the request (`message/send` that returns at once): its
        updates are read to the end by a task of its own, held here until then."""

        async def drain() -> None:
            async with aclosing(self.events()) as updates:
                async for _ in updates:
                    pass

        self._drain = asyncio.create_task(drain())

    def broke(self, failure: BaseException) -> None:
        """The request's encoding of the run broke: the run ends `failed` (internal_error),
        not `canceled`, when the updates are closed."""
        self._recorded.broken_by = failure

    async def cancel(self) -> None:
        self.canceled = True
        self._worker.cancel()
        await asyncio.wait({self._worker})


async def run_cancel(run_id: uuid.UUID) -> bool:
    """Cancel the run if this process runs it for an A2A task; False when it does not."""
    running = _running.get(run_id)
    if running is None:
        return False
    await running.cancel()
    return True
