"""A run's events as every protocol streams or collects them, recorded as they pass."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncGenerator

from agentbuilder.db import in_db
from agents.runs.record import RunRecorder
from agents.runs.start import Invocation
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseFailed
from agents.runtime.spec import Meter

logger = logging.getLogger(__name__)

# The client went away: the server cancels the response's task (or, on some servers, the
# socket's write fails), and the stream is closed.
CLIENT_GONE = (asyncio.CancelledError, GeneratorExit, OSError)
# The process is going down: the run ends with it.
PROCESS_EXIT = (KeyboardInterrupt, SystemExit)


class RecordedEvents:
    """A run's events, recorded as they pass; the run row is written once at the end:
    `canceled` when the client went away, `failed` (`internal_error`, logged with its
    traceback) when anything unexpected broke the run or the encoding of its stream.
    Every protocol streams through this, closing it with `aclosing`."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.broken_by: BaseException | None = None
        self._events = self._recorded()

    def __aiter__(self) -> RecordedEvents:
        return self

    async def __anext__(self) -> Event:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        # The consumer's `aclosing` calls this while it handles what ended its loop: the
        # client going away, or an error of its own (an encoder's), which is no cancel.
        failure = sys.exc_info()[1]
        if failure is not None and not isinstance(failure, CLIENT_GONE):
            self.broken_by = failure
        await self._events.aclose()

    async def _recorded(self) -> AsyncGenerator[Event, None]:
        invocation = self.invocation
        recorder = RunRecorder(invocation)
        canceled = False
        try:
            broken: ResponseFailed | None = None
            try:
                async for event in run(
                    invocation.spec,
                    invocation.run_input,
                    response_id=invocation.response_id,
                    meter=Meter(trace=recorder.trace),
                ):
                    recorder.observe(event)
                    yield event
            except (*CLIENT_GONE, *PROCESS_EXIT):
                raise
            except BaseException:
                # The runtime ends its own failures with ResponseFailed: this escaped it (a
                # tool's BaseException, a bug below it). The client still gets a last line.
                logger.exception("run %s broke", invocation.run_id)
                broken = recorder.broke()
            if broken is not None:  # yielded outside the except: no exception context
                yield broken
        except CLIENT_GONE:
            if self.broken_by is None:
                canceled = True
            else:
                failure = self.broken_by
                logger.error("the stream of run %s broke", invocation.run_id, exc_info=failure)
                recorder.broke()
            raise
        except PROCESS_EXIT:
            recorder.broke("interrupted", "the server process stopped during the run")
            raise
        finally:
            # On a disconnect this runs in a cancelled task: shield the write.
            await asyncio.shield(in_db(recorder.save)(canceled=canceled))


def recorded_events(invocation: Invocation) -> RecordedEvents:
    return RecordedEvents(invocation)


async def collected_events(invocation: Invocation) -> list[Event]:
    return [event async for event in recorded_events(invocation)]
