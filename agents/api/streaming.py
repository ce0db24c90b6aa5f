"""The one path every protocol's view answers through: a run's events, recorded as they
pass, streamed through the protocol's encoder or collected for its whole answer, under
the run's headers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing

from django.http import StreamingHttpResponse

from agents.runs.pacing import paced
from agents.runs.start import Invocation
from agents.runs.stream import collected_events, recorded_events
from agents.runtime.events import Event

__all__ = ["collected_events", "run_headers", "streamed"]

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def run_headers(invocation: Invocation, *, stream: bool = False) -> dict[str, str]:
    headers = {"X-Run-Id": str(invocation.run_id)}
    return {**STREAM_HEADERS, **headers} if stream else headers


def streamed(
    invocation: Invocation,
    frames: Callable[[Event], list[bytes]],
    content_type: str,
    *,
    keepalive: tuple[float, bytes] | None = None,
) -> StreamingHttpResponse:
    """The run's events as the encoder's `frames`; with `keepalive` (seconds, frame), that
    frame each time the run is silent for so long."""

    async def body() -> AsyncIterator[bytes]:
        # aclosing: when the client leaves, the run is closed (and recorded) at once,
        # not whenever the garbage collector gets to it.
        async with aclosing(recorded_events(invocation)) as events:
            if keepalive is None:
                async for event in events:
                    for frame in frames(event):
                        yield frame
                return
            interval, beat = keepalive
            async with aclosing(paced(events, interval)) as beats:
                async for paced_event in beats:
                    if paced_event is None:
                        yield beat
                        continue
                    for frame in frames(paced_event):
                        yield frame

    response = StreamingHttpResponse(body(), content_type=content_type)
    for name, value in run_headers(invocation, stream=True).items():
        response[name] = value
    return response
