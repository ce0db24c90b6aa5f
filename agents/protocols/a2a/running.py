"""An A2A run its request answers (a send that waits, a stream), consumed in an asyncio
task of its own so that the request can pace it (keep-alive comments while it is silent).

A run's events go through the one recorded path (agents.runs.stream.recorded_events) in a
worker task and reach the request through a queue, one at a time. A cancel
(`tasks/cancel`, from any process: agents.runs.live.run_cancel) stops the run where it
waits and the request ends with a `canceled` update; the client hanging up cancels the
worker, as on any stream. A send that returns at once is no RunningTask: its run is
handed to the process (agents.runs.detached).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

from agents.protocols.a2a.encoder import Canceled, Update
from agents.runs.start import Invocation
from agents.runs.stream import CANCELED, recorded_events


class RunningTask:
    """A run started for an A2A task; iterate it for its events (then Canceled, if it was)."""

    def __init__(self, invocation: Invocation) -> None:
        self.run_id = invocation.run_id
        self._queue: asyncio.Queue[Update | None] = asyncio.Queue()
        self._recorded = recorded_events(invocation)
        self._worker = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        try:
            async with aclosing(self._recorded) as events:
                async for event in events:
                    canceled = event is CANCELED and self._recorded.canceled
                    self._queue.put_nowait(Canceled() if canceled else event)
                    # In step with the request: the run goes on (and records its end) once
                    # the request has encoded this event, so an encoding that breaks is
                    # the run's failure, as on every other protocol's stream.
                    await self._queue.join()
        finally:
            self._queue.put_nowait(None)

    async def events(self, keepalive: float | None = None) -> AsyncGenerator[Update | None, None]:
        """The run's updates; with `keepalive`, None each time it is silent that long.
        Closing this early (the client left) cancels the run."""
        # Not agents.runs.pacing.paced: that awaits the next update ahead of the consumer,
        # and the queue's task_done must wait until the request has encoded this one.
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

    def broke(self, failure: BaseException) -> None:
        """The request's encoding of the run broke: the run ends `failed` (internal_error),
        not `canceled`, when the updates are closed."""
        self._recorded.broken_by = failure
