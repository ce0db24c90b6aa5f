"""One model call inside a run: stream its text out, collect its tool calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from agents.configs import BaseAgentConfig
from agents.llm.base import (
    Finished,
    Message,
    ModelRequest,
    Purpose,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
    Usage,
)
from agents.runtime.events import TextDelta
from agents.runtime.pricing import cost_usd
from agents.runtime.spec import AgentSpec, Meter
from agents.runtime.steps import ModelCallStep


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
    spec: AgentSpec, request: ModelRequest, meter: Meter, result: StepResult, *, stream: bool
) -> AsyncIterator[TextDelta]:
    """Run one call; yields its text as deltas when `stream`, fills `result` as it goes.
    The call is a step of the run's trace, however it ends."""
    usage = Usage()
    cost: float | None = None
    await meter.before_call()  # a budget spent stops the run here, before the call
    step = meter.trace.start("model_call", ModelCallStep(spec.model, usage.as_dict()))
    first: int | None = None
    status = "failed"
    parts: list[str] = []
    try:
        async for event in spec.provider.stream(request):
            if isinstance(event, TextChunk) and not event.text:
                continue
            if first is None and isinstance(event, TextChunk | ToolCallChunk):
                first = step.elapsed_ms()
            if isinstance(event, TextChunk):
                parts.append(event.text)
                if stream:
                    yield TextDelta(event.text)
            elif isinstance(event, ToolCallChunk):
                arguments = event.call.arguments.strip() or "{}"
                call = ToolCallPart(event.call.call_id, event.call.name, arguments)
                result.tool_calls.append(call)
            elif isinstance(event, Finished):
                usage, cost = event.usage, cost_usd(event.usage, spec.price)
                await meter.add(spec.model, usage, cost)
                result.stop_reason = event.stop_reason
        status = "completed"
    except (GeneratorExit, asyncio.CancelledError):
        status = "canceled"  # closed by a guardrail's block, or the client went away
        raise
    finally:
        stop = result.stop_reason if status == "completed" else None
        step.end(status, ModelCallStep(spec.model, usage.as_dict(), first, stop, cost))
    result.text = "".join(parts)
