"""`GET /v1/runs/{id}/events` (docs/api.md#run-events): a run's stored events, replayed from
an index and followed live to the run's end (agents.runs.event_log), as the lines
invoke-stream writes (agents.protocols.native.encoder), each with its index: NDJSON, or SSE
whose `id:` is the index.

The lines are the native stream's whatever protocol ran the run, so a client of
invoke-stream reads them unchanged; the index is what it resumes from (`after`, or
`Last-Event-ID`). A run that ended without a terminal event (canceled, interrupted) gets
one last `response.failed` line that says so, without an index: it is not a stored event.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from agentbuilder.db import in_db
from agentbuilder.errors import Invalid
from agents.models import RunStatus
from agents.protocols.native.encoder import NdjsonEncoder
from agents.runs.event_feed import Read
from agents.runs.event_log import (
    RunFollower,
    run_event_at,
    run_events_follow,
    run_replay,
    run_terminal_stored,
)
from agents.runs.pacing import paced
from agents.runs.stream import CANCELED
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed
from agents.runtime.failures import FailureCode

# Silence longer than this gets a keep-alive frame, as the other streams send it.
KEEPALIVE_SECONDS = 15.0
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
# RunEvent.index is a PostgreSQL integer: a start past it could not be compared with one.
LAST_INDEX = 2**31 - 1


@dataclass(frozen=True)
class EventsStart:
    """Where a follower of `run_id` starts: at index `after`, its encoder primed with the
    run's first event (the response id every line carries) when that is before `after`,
    and the run as read from there."""

    run_id: uuid.UUID
    after: int
    head: Event | None
    replay: Read


def resume_after(last_event_id: str | None, after: int) -> int:
    """Where the stream starts: past the `Last-Event-ID` an SSE client resumes from, else at
    `after`. Raises Invalid at the header for one that is no event's index."""
    if last_event_id is None:
        return after
    value = last_event_id.strip()
    # Ten digits at most: int() of a long enough string raises (or takes its time).
    if not (value.isascii() and value.isdigit() and len(value) <= 10 and int(value) < LAST_INDEX):
        raise Invalid.at(
            ("header", "Last-Event-ID"), "must be the index of an event (an integer from 0)"
        )
    return int(value) + 1


def events_start(run_id: uuid.UUID, after: int) -> EventsStart:
    """In a database hop (the view's first): the stored events from where the follower
    starts, and the first event when that is past it."""
    head = run_event_at(run_id, 0) if after > 0 else None
    follow_from = after if after == 0 or head is not None else 0
    return EventsStart(run_id, after, head, run_replay(run_id, follow_from))


class Frames:
    """An object line as NDJSON, or as an SSE event whose `id:` is its index."""

    def __init__(self, sse: bool) -> None:
        self.sse = sse
        self.keepalive = b": keep-alive\n\n" if sse else b"\n"

    def frame(self, line: dict[str, Any], index: int | None) -> bytes:
        if index is not None:
            line = {**line, "index": index}
        data = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        if not self.sse:
            return data.encode() + b"\n"
        head = f"id: {index}\n" if index is not None else ""
        return f"{head}data: {data}\n\n".encode()


async def event_frames(start: EventsStart, frames: Frames) -> AsyncIterator[bytes]:
    """The run's lines from `start.after` to its end, a keep-alive frame each
    KEEPALIVE_SECONDS of silence. The client leaving stops the following, not the run.
    The lines read together (a replay, a tick's) go out in one write."""
    encoder = NdjsonEncoder()
    follow_from = start.after
    if start.after > 0:
        if start.head is not None:
            encoder.line(start.head)
        else:  # not stored yet (a queued run): read it on the way, show from `after`
            follow_from = 0
    follower = run_events_follow(start.run_id, after=follow_from, replay=start.replay)
    ended = False
    async with aclosing(paced(follower, KEEPALIVE_SECONDS)) as beats:
        async for item in beats:
            if item is None:
                yield frames.keepalive
                continue
            chunk = []
            for index, event in (item, *follower.take_ready()):
                line = encoder.line(event)
                if line is None or index < start.after:
                    continue
                ended = isinstance(event, ResponseCompleted | ResponseFailed)
                chunk.append(frames.frame(line, index))
            if chunk:
                yield b"".join(chunk)
    if ended:
        return
    last = await _end_without_event(follower)
    if last is not None:
        line = encoder.line(last)
        assert line is not None
        yield frames.frame(line, None)


async def _end_without_event(follower: RunFollower) -> ResponseFailed | None:
    """How the run ended when no terminal event was shown: its status's failure, unless the
    run stored a terminal event that the client started after."""
    if follower.status == RunStatus.COMPLETED:
        return None  # a completed run always stores its ResponseCompleted
    if await in_db(run_terminal_stored)(follower.run_id):
        return None
    if follower.status == RunStatus.CANCELED:
        return CANCELED
    error = follower.error or {}
    code = FailureCode(error.get("code", FailureCode.INTERRUPTED))
    return ResponseFailed(code, error.get("message", ""))
