"""A run's events as every protocol streams or collects them, recorded as they pass."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncGenerator

from agentbuilder.db import in_db
from agents.models import RunStatus
from agents.runs import leases, live
from agents.runs.record import RunRecorder
from agents.runs.start import Invocation
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseFailed
from agents.runtime.failures import FailureCode
from agents.runtime.spec import Meter

logger = logging.getLogger(__name__)

# The client went away: the server cancels the response's task (or, on some servers, the
# socket's write fails), and the stream is closed.
CLIENT_GONE = (asyncio.CancelledError, GeneratorExit, OSError)
# The process is going down: the run ends with it.
PROCESS_EXIT = (KeyboardInterrupt, SystemExit)
# What the consumer of a canceled run gets last (not recorded: the run's status says it).
CANCELED = ResponseFailed(FailureCode.CANCELED, "the run was canceled")


class RecordedEvents:
    """A run's events, recorded as they pass (and kept, agents.runs.event_log); the run row
    is written once at the end: `canceled` when the client went away or a cancel reached
    the run (agents.runs.live), `failed` (`internal_error`, logged with its traceback) when
    anything unexpected broke the run or the encoding of its stream. Every protocol streams
    through this, closing it with `aclosing`.

    A cancel (`run_cancel`, from any process) stops the run where it waits, as a client
    hanging up does, and the run is recorded `canceled`; the consumer then gets one last
    event, CANCELED (a failure with code `canceled`, not recorded: the run's status says
    it), `canceled` is set, and the events end."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.broken_by: BaseException | None = None
        self.canceled = False  # by run_cancel; the run is recorded so once iteration ends
        self._cancel_requested = False
        self._waiting: asyncio.Task[object] | None = None  # the consumer, inside __anext__
        self._over = False
        self._recorder: RunRecorder | None = None
        self._events = self._recorded()

    def __aiter__(self) -> RecordedEvents:
        return self

    async def __anext__(self) -> Event:
        if self._over:
            raise StopAsyncIteration
        task = asyncio.current_task()
        try:
            if self._cancel_requested:  # asked between two events: stop where it yielded
                await self._events.athrow(asyncio.CancelledError())
            self._waiting = task
            return await self._events.__anext__()
        except asyncio.CancelledError:
            # Ours (run_cancel) unless someone else canceled the consumer as well.
            if self._cancel_requested and task is not None and task.uncancel() == 0:
                self.canceled = self._over = True
                return CANCELED
            raise
        finally:
            self._waiting = None

    def _cancel(self) -> None:
        """A cancel reached the run (in its loop): stop it where it waits, unless it has
        ended already (its end is being written)."""
        recorder = self._recorder
        if self._cancel_requested or (recorder and recorder.status != RunStatus.IN_PROGRESS):
            return
        self._cancel_requested = True
        if self._waiting is not None:
            self._waiting.cancel()
        # Otherwise the consumer is between two events: its next __anext__ stops the run.

    async def aclose(self) -> None:
        # The consumer's `aclosing` calls this while it handles what ended its loop: the
        # client going away, or an error of its own (an encoder's), which is no cancel.
        failure = sys.exc_info()[1]
        if failure is not None and not isinstance(failure, CLIENT_GONE):
            self.broken_by = failure
        await self._events.aclose()

    async def _recorded(self) -> AsyncGenerator[Event, None]:
        invocation = self.invocation
        recorder = self._recorder = RunRecorder(invocation)
        running = live.run_live(invocation.run_id, self._cancel)
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
            recorder.broke(FailureCode.INTERRUPTED, "the server process stopped during the run")
            raise
        finally:
            # On a disconnect this runs in a cancelled task: shield the write.
            await asyncio.shield(self._end(recorder, running, canceled))

    async def _end(self, recorder: RunRecorder, running: live.LiveRun, canceled: bool) -> None:
        try:
            await recorder.events.settle()
            await in_db(recorder.save)(canceled=canceled)
        except Exception:
            # Not written (the database is gone, a bug): no beat vouches for the run any
            # more, so its lease runs out and the sweep closes it `interrupted`.
            logger.exception("run %s: recording its end failed", self.invocation.run_id)
            raise
        finally:
            live.run_gone(running)
            leases.run_ended(self.invocation.run_id)


def recorded_events(invocation: Invocation) -> RecordedEvents:
    return RecordedEvents(invocation)


async def collected_events(invocation: Invocation) -> list[Event]:
    return [event async for event in recorded_events(invocation)]
