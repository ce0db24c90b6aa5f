"""The one path a run takes to its client, whatever the protocol: its events recorded as
they pass (and shown to the run hooks, agents.runs.hooks), then encoded as a stream
(`encoded`, with keep-alive) or taken one by one to the end (`answered`, `collected`).
A protocol's view only parses its request and encodes events
(docs/architecture.md#request-path).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from contextlib import aclosing
from typing import TypeVar

from agentbuilder.db import in_db
from agents.models import RunStatus
from agents.runs import leases, live
from agents.runs.hooks import StopRun, hooks_end, hooks_see
from agents.runs.pacing import batched
from agents.runs.record import RunRecorder
from agents.runs.start import Invocation
from agents.runs.telemetry import run_exported
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseFailed
from agents.runtime.failures import FailureCode
from agents.runtime.spec import Meter
from agents.runtime.tracecontext import running

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The client went away: the server cancels the response's task (or, on some servers, the
# socket's write fails), and the stream is closed.
CLIENT_GONE = (asyncio.CancelledError, GeneratorExit, OSError)
# The process is going down: the run ends with it.
PROCESS_EXIT = (KeyboardInterrupt, SystemExit)
# What the consumer of a canceled run gets last (not recorded: the run's status says it).
CANCELED = ResponseFailed(FailureCode.CANCELED, "the run was canceled")
# What a run still running when its process's shutdown grace is over ends with, recorded.
SHUT_DOWN = "the server shut down before the run finished (SHUTDOWN_GRACE_SECONDS)"


class RecordedEvents:
    """A run's events, recorded as they pass (and kept, agents.runs.event_log); the run row
    is written once at the end: `canceled` when the client went away or a cancel reached
    the run (agents.runs.live), `failed` (`internal_error`, logged with its traceback) when
    anything unexpected broke the run or the encoding of its stream. Every protocol streams
    through this, closing it with `aclosing`.

    A cancel (`run_cancel`, from any process) stops the run where it waits, as a client
    hanging up does, and the run is recorded `canceled`; the consumer then gets one last
    event, CANCELED (a failure with code `canceled`, not recorded: the run's status says
    it), `canceled` is set, and the events end. A shutdown whose grace is over
    (agentbuilder.shutdown) stops it the same way, but the run is recorded `failed` /
    `interrupted` and that failure is the consumer's last event."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.broken_by: BaseException | None = None
        self.canceled = False  # by run_cancel; the run is recorded so once iteration ends
        self._cancel_requested = False
        self._interrupted: ResponseFailed | None = None  # by a shutdown, recorded so
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
            token = running.set(self.invocation.trace)  # its log lines' trace
            try:
                return await self._events.__anext__()
            finally:
                running.reset(token)
        except asyncio.CancelledError:
            # Ours (run_cancel) unless someone else canceled the consumer as well.
            if self._cancel_requested and task is not None and task.uncancel() == 0:
                self._over = True
                if self._interrupted is not None:
                    return self._interrupted
                self.canceled = True
                return CANCELED
            raise
        finally:
            self._waiting = None

    def _interrupt(self) -> None:
        """The process's shutdown grace is over (in the run's loop): stop it as a cancel
        does, recorded `failed` / `interrupted`."""
        if self._cancel_requested or self._recorder is None:
            return
        self._interrupted = ResponseFailed(FailureCode.INTERRUPTED, SHUT_DOWN)
        self._cancel()

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
        running = live.run_live(invocation.run_id, self._cancel, self._interrupt)
        canceled = False
        try:
            broken: ResponseFailed | None = None
            events = run(
                invocation.spec,
                invocation.run_input,
                response_id=invocation.response_id,
                meter=Meter(trace=recorder.trace),
            )
            try:
                # aclosing: a hook's stop leaves the runtime where it waits, closed now.
                async with aclosing(events):
                    async for event in events:
                        await hooks_see(invocation, event)
                        recorder.observe(event)
                        yield event
            except (*CLIENT_GONE, *PROCESS_EXIT):
                raise
            except StopRun as stop:
                logger.info("run %s stopped by a hook: %s", invocation.run_id, stop.code)
                broken = recorder.broke(stop.code, stop.message)
            except BaseException:
                # The runtime ends its own failures with ResponseFailed: this escaped it (a
                # tool's BaseException, a bug below it). The client still gets a last line.
                logger.exception("run %s broke", invocation.run_id)
                broken = recorder.broke()
            if broken is not None:  # yielded outside the except: no exception context
                yield broken
        except CLIENT_GONE:
            if self._interrupted is not None:
                recorder.broke(self._interrupted.code, self._interrupted.message)
            elif self.broken_by is None:
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
            run_exported(self.invocation, recorder)
        except Exception:
            # Not written (the database is gone, a bug): no beat vouches for the run any
            # more, so its lease runs out and the sweep closes it `interrupted`.
            logger.exception("run %s: recording its end failed", self.invocation.run_id)
            raise
        finally:
            live.run_gone(running)
            leases.run_ended(self.invocation.run_id)
        await hooks_end(self.invocation, recorder.status)


def recorded_events(invocation: Invocation) -> RecordedEvents:
    return RecordedEvents(invocation)


# What a protocol makes of one event: its frames, or nothing (sync, or async when it must
# read something first, as the playground reads the titles of a RAG answer's sources).
Encode = Callable[[Event], Iterable[bytes] | Awaitable[Iterable[bytes]]]
Take = Callable[[Event], object]  # awaited if it answers an awaitable


async def encoded(
    invocation: Invocation, encode: Encode, *, keepalive: tuple[float, bytes] | None = None
) -> AsyncIterator[bytes]:
    """The run's events as `encode` frames them; with `keepalive` (seconds, frame), that
    frame each time the run is silent for so long. Closing this early (the client left)
    cancels the run; an encoder that raises fails it (`internal_error`), recorded."""
    # aclosing: when the client leaves, the run is closed (and recorded) at once, not
    # whenever the garbage collector gets to it.
    interval, beat = keepalive if keepalive is not None else (None, b"")
    async with (
        aclosing(recorded_events(invocation)) as events,
        aclosing(batched(events, interval)) as batches,
    ):
        async for batch in batches:
            if batch is None:
                yield beat
                continue
            # The events that came together go out in one write (one ASGI message, one
            # socket write): per delta, a write was the largest cost of a stream.
            frames: list[bytes] = []
            try:
                for event in batch:
                    frames.extend(await _maybe(encode(event)))
            except Exception as exc:
                # Said before the run is closed: the run was broken, not left.
                events.broken_by = exc
                raise
            if frames:
                yield frames[0] if len(frames) == 1 else b"".join(frames)


async def answered(invocation: Invocation, take: Take | None = None) -> list[Event]:
    """The run to its end, each event handed to `take` in step with the run (what `take`
    raises fails the run, recorded, as a broken encoder does); its events."""
    seen: list[Event] = []
    async with aclosing(recorded_events(invocation)) as events:
        async for event in events:
            taken = take(event) if take is not None else None
            if inspect.isawaitable(taken):
                await taken
            seen.append(event)
    return seen


async def collected_events(invocation: Invocation) -> list[Event]:
    return await answered(invocation)


async def _maybe(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value
