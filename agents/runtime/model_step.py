"""One model call inside a run: stream its text out, collect its tool calls."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from agents.configs import BaseAgentConfig
from agents.llm.base import (
    Finished,
    Message,
    ModelRequest,
    Provider,
    Purpose,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
)
from agents.runtime.events import TextDelta
from agents.runtime.spec import Meter


def model_request(
    config: BaseAgentConfig,
    *,
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec] = (),
    force_tool: str | None = None,
    purpose: Purpose = "chat",
    context: Iterable[str] = (),
) -> ModelRequest:
    """A call to the config's model with its inference settings, saying what it is for."""
    inference = config.inference_config
    return ModelRequest(
        model_id=config.llm_model_id,
        system=system,
        messages=tuple(messages),
        tools=tuple(tools),
        force_tool=force_tool,
        max_tokens=inference.max_tokens,
        temperature=inference.temperature,
        max_retries=inference.max_retries,
        timeout=inference.timeout,
        purpose=purpose,
        context=tuple(context),
    )


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
