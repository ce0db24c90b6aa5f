"""One model call inside a run: stream its text out, collect its tool calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agents.llm.base import (
    Finished,
    ModelRequest,
    Provider,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
)
from agents.runtime.events import TextDelta
from agents.runtime.spec import Meter


@dataclass
class StepResult:
    text: str = ""
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    stop_reason: str = "end_turn"


async def model_step(
    provider: Provider, request: ModelRequest, meter: Meter, result: StepResult, *, stream: bool
) -> AsyncIterator[TextDelta]:
    """Run one call; yields its text as deltas when `stream`, fills `result` as it goes."""
    parts: list[str] = []
    async for event in provider.stream(request):
        if isinstance(event, TextChunk):
            if not event.text:
                continue
            parts.append(event.text)
            if stream:
                yield TextDelta(event.text)
        elif isinstance(event, ToolCallChunk):
            arguments = event.call.arguments.strip() or "{}"
            result.tool_calls.append(ToolCallPart(event.call.call_id, event.call.name, arguments))
        elif isinstance(event, Finished):
            meter.add(event.usage)
            result.stop_reason = event.stop_reason
    result.text = "".join(parts)
