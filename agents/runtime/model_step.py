"""One model call inside a run: stream its text out, collect its tool calls."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from agents.configs import BaseAgentConfig
from agents.llm.base import (
    Finished,
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    Purpose,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
    Usage,
)
from agents.runtime.events import TextDelta
from agents.runtime.pricing import Price, cost_usd
from agents.runtime.spec import AgentSpec, Meter
from agents.runtime.steps import ModelCallStep
from agents.runtime.trace import cut

logger = logging.getLogger(__name__)


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
    The provider is asked for a stream only when `stream` and the run's deltas are read
    (Meter.deltas); otherwise the text comes as one delta, when the answer has come.

    A call that fails before it produced any text or tool call, in a way another model may
    not (ProviderError.fallback_ok), goes to the config's fallback models in turn
    (docs/api.md#fallback-models). Each attempt is a model_call step of the run's trace,
    however it ends; when every model failed, the last one's error ends the run."""
    # A budget spent stops the run here, before the call. Once per call, fallbacks
    # included: a failed attempt used no tokens, and the gate is told of the one that did.
    await meter.before_call()
    if not (stream and meter.deltas):  # nobody reads its deltas: one answer costs less
        request = dataclasses.replace(request, stream=False)
    attempts = [_Attempt(spec.provider, spec.model, spec.price, request)]
    attempts += [
        _Attempt(f.provider, f.model, f.price, dataclasses.replace(request, model_id=f.model))
        for f in spec.fallbacks
    ]
    for number, attempt in enumerate(attempts, 1):
        try:
            async for delta in attempt.run(meter, result, stream=stream):
                yield delta
            return
        except ProviderError as exc:
            # Once the client has text, or a tool call is on its way, another model's
            # answer would not follow on from it.
            if number == len(attempts) or not exc.fallback_ok or attempt.produced:
                raise
            logger.warning(
                "model %s failed, trying %s: %s", attempt.model, attempts[number].model, exc
            )


@dataclass
class _Attempt:
    """One model's try at a call."""

    provider: Provider
    model: str
    price: Price | None
    request: ModelRequest
    produced: bool = False  # a text or a tool call came

    async def run(
        self, meter: Meter, result: StepResult, *, stream: bool
    ) -> AsyncIterator[TextDelta]:
        usage = Usage()
        cost: float | None = None
        step = meter.trace.start("model_call", ModelCallStep(self.model, usage.as_dict()))
        first: int | None = None
        status = "failed"
        error: str | None = None
        parts: list[str] = []
        request = self.request
        span = meter.trace.span_of(step)
        if span is not None:  # the provider's HTTP request names this call's span
            request = dataclasses.replace(request, traceparent=span.header())
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, TextChunk) and not event.text:
                    continue
                if first is None and isinstance(event, TextChunk | ToolCallChunk):
                    first = step.elapsed_ms()
                    self.produced = True
                if isinstance(event, TextChunk):
                    parts.append(event.text)
                    if stream:
                        yield TextDelta(event.text)
                elif isinstance(event, ToolCallChunk):
                    arguments = event.call.arguments.strip() or "{}"
                    call = ToolCallPart(event.call.call_id, event.call.name, arguments)
                    result.tool_calls.append(call)
                elif isinstance(event, Finished):
                    usage, cost = event.usage, cost_usd(event.usage, self.price)
                    await meter.add(self.model, usage, cost)
                    result.stop_reason = event.stop_reason
            status = "completed"
        except ProviderError as exc:
            error = cut(str(exc))
            raise
        except (GeneratorExit, asyncio.CancelledError):
            status = "canceled"  # closed by a guardrail's block, or the client went away
            raise
        finally:
            stop = result.stop_reason if status == "completed" else None
            detail = ModelCallStep(self.model, usage.as_dict(), first, stop, cost, error)
            step.end(status, detail)
        result.text = "".join(parts)
