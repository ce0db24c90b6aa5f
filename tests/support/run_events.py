"""`GET /v1/runs/{id}/events` as a client reads it (docs/api.md#run-events): NDJSON lines or
SSE events, keep-alive frames left out, and the lines a run's stored events make."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import async_to_sync

from agents.models import RunEvent
from agents.protocols.native.encoder import NdjsonEncoder
from agents.runs.event_codec import event_from_json


def ndjson_lines(raw: bytes) -> list[dict[str, Any]]:
    """The JSON lines of an NDJSON body; empty lines are keep-alive frames."""
    text = raw.decode()
    assert text.endswith("\n") or not text, "every line, the last too, ends with a newline"
    return [json.loads(line) for line in text.split("\n") if line]


def sse_events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """The (id, data) of each SSE event of a body; comments (keep-alive) left out."""
    events = []
    for block in raw.decode().split("\n\n"):
        fields = [line.split(": ", 1) for line in block.split("\n") if line and line[0] != ":"]
        if not fields:
            continue
        named = dict(fields)
        assert set(named) <= {"id", "data"}, block
        events.append((named.get("id"), json.loads(named["data"])))
    return events


async def _drain(content: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in content]


def body_of(response: Any) -> bytes:
    """The whole body of a test client's (streaming) response."""
    if not response.streaming:
        return bytes(response.content)
    return b"".join(async_to_sync(_drain)(response.streaming_content))


def stored_lines(run_id: Any) -> list[dict[str, Any]]:
    """The lines the run's stored events make, each with its index: what a follower from 0
    reads, but for a run that ended without a terminal event."""
    encoder = NdjsonEncoder()
    lines = []
    rows = RunEvent.objects.filter(run_id=run_id).order_by("index").values_list("index", "event")
    for index, data in rows:
        line = encoder.line(event_from_json(data))
        if line is not None:
            lines.append({**line, "index": index})
    return lines
