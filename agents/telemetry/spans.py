"""A run's spans, named and attributed as the OpenTelemetry GenAI semantic conventions say,
built in one place from the steps the run's timeline shows, once the run has ended:
`invoke_agent {agent}` with a `chat {model}` per model call, an `execute_tool {tool}` per
tool call, a `retrieval {environment}` per search, and its guardrails' interventions and
approvals as events. Each span has the id its step drew when it started (so the calls the
step made named it already) and the step's own start and end.

Off, the SDK is never imported. On, spans go to a batch processor: its thread exports them
over OTLP/HTTP, and the run that made them never waits on the collector.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from opentelemetry import trace as otel_trace

from agents.llm.base import Message
from agents.runtime.steps import (
    ApprovalDecisionStep,
    ApprovalRequestStep,
    GuardrailStep,
    ModelCallStep,
    RetrievalStep,
    StepDetail,
    ToolCallStep,
)
from agents.runtime.trace import Step, cut
from agents.runtime.tracecontext import RunTrace

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

logger = logging.getLogger(__name__)

SCOPE = "agentbuilder"
CONTENT_BYTES = 16 * 1024  # of one content attribute (messages as JSON, a tool's result)
# The conventions' finish reasons (OpenAI's words) for the runtime's stop reasons.
FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


@dataclass(frozen=True)
class RunFacts:
    """What a run's spans say of the run itself, beside its steps."""

    trace: RunTrace
    agent_name: str
    agent_id: str
    version: int
    provider: str
    model: str
    run_id: str
    response_id: str
    thread_id: str
    environment: str
    started_ns: int  # epoch nanoseconds
    ended_ns: int
    status: str  # the run's: completed, failed, canceled, awaiting_approval
    usage: Mapping[str, int]
    error_code: str | None = None
    error_message: str | None = None
    providers: Mapping[str, str] = field(default_factory=dict)  # by model, fallbacks' too
    datastores: frozenset[str] = frozenset()  # the tools that search an environment
    messages: Sequence[Message] = ()  # the turn's input
    answer: str | None = None  # as the caller got it (a guardrail's message, if one blocked)
    draft: bool = False  # an unsaved config ran in place of `version`'s (the playground's)


# ---------------------------------------------------------------- the pipeline


@dataclass(frozen=True)
class _Pipeline:
    """Where a run's spans go, and the resource and scope they name."""

    processor: SpanProcessor
    resource: Resource
    scope: InstrumentationScope


_lock = threading.Lock()
_pipeline: _Pipeline | None = None
_configured = False
# The SDK caps a span's events at 128 by default; a run's spans keep to the same.
MAX_EVENTS = 128


def enabled() -> bool:
    """Whether runs export spans (OTEL_EXPORTER_OTLP_ENDPOINT set, or a test's processor)."""
    if not _configured:
        _configure()
    return _pipeline is not None


def _configure() -> None:
    global _configured, _pipeline
    with _lock:
        if _configured:
            return
        if settings.OTEL_EXPORTER_OTLP_ENDPOINT and not settings.OTEL_SDK_DISABLED:
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            from agents.telemetry.otlp import SpanExporter

            processor = BatchSpanProcessor(
                SpanExporter(),
                # The SDK's defaults (a batch each 5 s, 2,048 queued) dropped spans at 100
                # runs a second (bench/otel_export.py); OTEL_BSP_* set win over these.
                max_queue_size=None if "OTEL_BSP_MAX_QUEUE_SIZE" in os.environ else 8192,
                schedule_delay_millis=None if "OTEL_BSP_SCHEDULE_DELAY" in os.environ else 1000,
            )
            provider = _provider(processor)
            # The global one too: the MCP SDK's client and server spans join the same export.
            otel_trace.set_tracer_provider(provider)
            _pipeline = _pipeline_of(processor, provider)
        _configured = True


def _provider(processor: SpanProcessor) -> TracerProvider:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the default.
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "agentbuilder"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(processor)
    return provider


def _pipeline_of(processor: SpanProcessor, provider: TracerProvider) -> _Pipeline:
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    return _Pipeline(processor, provider.resource, InstrumentationScope(SCOPE))


def use_processor(processor: SpanProcessor | None) -> TracerProvider | None:
    """Runs export to `processor` from now (tests: the SDK's in-memory exporter); None: as
    the settings say again. The provider made for it (None for None)."""
    global _configured, _pipeline
    with _lock:
        if processor is None:
            _configured, _pipeline = False, None
            return None
        provider = _provider(processor)
        _pipeline, _configured = _pipeline_of(processor, provider), True
        return provider


# ---------------------------------------------------------------- the spans


def export_run(facts: RunFacts, steps: Iterable[Step]) -> None:
    """Hand the run's spans to the processor (a no-op when export is off).

    The spans are made as the SDK's tracer ends them (ReadableSpan), not through it: the
    tracer's sampler, attribute checks and lock cost a fifth of a millisecond a run
    (bench/otel_export.py), for spans whose ids, times and attributes are all known here,
    sampled (the caller's flag, checked here) and within the SDK's limits."""
    if not enabled():
        return
    pipeline = _pipeline
    assert pipeline is not None
    if not facts.trace.sampled:  # the caller's trace is not being recorded
        return
    from opentelemetry.sdk.trace import Event, ReadableSpan

    def span(
        name: str,
        span_id: int,
        parent: otel_trace.SpanContext | None,
        kind: otel_trace.SpanKind,
        attributes: dict[str, Any],
        events: Sequence[tuple[str, dict[str, Any], int]],
        status: otel_trace.Status,
        start_ns: int,
        end_ns: int,
    ) -> ReadableSpan:
        return ReadableSpan(
            name,
            context=otel_trace.SpanContext(trace_id, span_id, False, SAMPLED),
            parent=parent,
            resource=pipeline.resource,
            attributes=attributes,
            events=[Event(*event) for event in events[:MAX_EVENTS]],
            kind=kind,
            instrumentation_scope=pipeline.scope,
            status=status,
            start_time=start_ns,
            end_time=end_ns,
        )

    trace_id = facts.trace.trace_id
    content = bool(settings.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)
    steps = list(steps)
    withheld = _withheld_results(steps)
    events: dict[int | None, list[tuple[str, dict[str, Any], int]]] = {}
    shaped: list[tuple[Step, str, otel_trace.SpanKind, dict[str, Any]]] = []
    for step in steps:
        detail = step.reported
        parent = step.parent.span_id if step.parent is not None else None
        if isinstance(detail, GuardrailStep | ApprovalRequestStep | ApprovalDecisionStep):
            event = _event(detail, content)
            events.setdefault(parent, []).append((*event, _start_ns(step)))
            continue
        found = _span_of(facts, detail, content, withheld)
        if found is not None:
            shaped.append((step, *found))
    for step, name, kind, attributes in shaped:
        parent_id = step.parent.span_id if step.parent is not None else facts.trace.span_id
        status = UNSET
        if step.status == "failed":
            status = otel_trace.Status(
                otel_trace.StatusCode.ERROR, getattr(step.reported, "error", None)
            )
        start_ns = _start_ns(step)
        pipeline.processor.on_end(
            span(
                name,
                step.span_id,
                otel_trace.SpanContext(trace_id, parent_id, False, SAMPLED),
                kind,
                attributes,
                events.get(step.span_id, ()),
                status,
                start_ns,
                _end_ns(step, facts.ended_ns),
            )
        )
    caller = facts.trace.parent_id  # a root span when the run continues no caller's span
    status = UNSET
    if facts.status == "failed":
        status = otel_trace.Status(otel_trace.StatusCode.ERROR, facts.error_message)
    pipeline.processor.on_end(
        span(
            f"invoke_agent {facts.agent_name}",
            facts.trace.span_id,
            None if caller is None else otel_trace.SpanContext(trace_id, caller, True, SAMPLED),
            otel_trace.SpanKind.INTERNAL,
            _root_attributes(facts, content, _blocked_input(steps)),
            events.get(None, ()),
            status,
            facts.started_ns,
            facts.ended_ns,
        )
    )


SAMPLED = otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED)
UNSET = otel_trace.Status(otel_trace.StatusCode.UNSET)


def _root_attributes(facts: RunFacts, content: bool, blocked_by: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": facts.agent_name,
        "gen_ai.agent.id": facts.agent_id,
        "gen_ai.agent.version": str(facts.version),
        "gen_ai.provider.name": facts.provider,
        "gen_ai.request.model": facts.model,
        "gen_ai.response.id": facts.response_id,
        "gen_ai.usage.input_tokens": int(facts.usage.get("input_tokens", 0)),
        "gen_ai.usage.output_tokens": int(facts.usage.get("output_tokens", 0)),
        "agentbuilder.run.id": facts.run_id,
        "agentbuilder.run.status": facts.status,
        "agentbuilder.environment": facts.environment,
    }
    if facts.thread_id:
        attributes["gen_ai.conversation.id"] = facts.thread_id
    if facts.draft:
        attributes["agentbuilder.draft"] = True
    if content:
        messages = _input_messages(facts.messages)
        if blocked_by is not None:  # what an input guardrail stopped leaves no copy here
            notice = f"[withheld by guardrail {blocked_by}]"
            messages = [{"role": "user", "parts": [{"type": "text", "content": notice}]}]
        attributes["gen_ai.input.messages"] = _content(messages)
        if facts.answer is not None:
            answer = [{"role": "assistant", "parts": [{"type": "text", "content": facts.answer}]}]
            attributes["gen_ai.output.messages"] = _content(answer)
    if facts.error_code:
        attributes["error.type"] = facts.error_code
    return attributes


def _span_of(
    facts: RunFacts, detail: StepDetail | None, content: bool, withheld: Mapping[str, str]
) -> tuple[str, otel_trace.SpanKind, dict[str, Any]] | None:
    """A step's span: its name, kind and attributes (None: a step with no span)."""
    if isinstance(detail, ModelCallStep):
        usage = detail.tokens_usage
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": facts.providers.get(detail.model, facts.provider),
            "gen_ai.request.model": detail.model,
            "gen_ai.response.model": detail.model,
            "gen_ai.usage.input_tokens": int(usage.get("input_tokens", 0)),
            "gen_ai.usage.output_tokens": int(usage.get("output_tokens", 0)),
        }
        if detail.stop_reason is not None:
            reason = FINISH_REASONS.get(detail.stop_reason, detail.stop_reason)
            attributes["gen_ai.response.finish_reasons"] = (reason,)
        if detail.cost_usd is not None:
            attributes["agentbuilder.cost_usd"] = detail.cost_usd
        if detail.time_to_first_token_ms is not None:
            attributes["agentbuilder.time_to_first_token_ms"] = detail.time_to_first_token_ms
        if detail.error is not None:
            attributes["error.type"] = "provider_error"
        return f"chat {detail.model}", otel_trace.SpanKind.CLIENT, attributes
    if isinstance(detail, ToolCallStep):
        kind = "datastore" if detail.name in facts.datastores else "extension"
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": detail.name,
            "gen_ai.tool.type": kind,
        }
        if detail.call_id is not None:
            attributes["gen_ai.tool.call.id"] = detail.call_id
        if detail.error is not None:
            attributes["error.type"] = "tool_error"
        if content:
            attributes["gen_ai.tool.call.arguments"] = cut(detail.arguments, CONTENT_BYTES)
            said = withheld.get(detail.call_id or "", detail.result or detail.error or "")
            attributes["gen_ai.tool.call.result"] = cut(said, CONTENT_BYTES)
        return f"execute_tool {detail.name}", otel_trace.SpanKind.INTERNAL, attributes
    if isinstance(detail, RetrievalStep):
        attributes = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": facts.environment,
            "agentbuilder.retrieval.hits": len(detail.hits),
        }
        if detail.hxql_query:
            attributes["agentbuilder.retrieval.filter"] = detail.hxql_query
        if content:
            attributes["gen_ai.retrieval.query.text"] = cut(detail.query, CONTENT_BYTES)
        return f"retrieval {facts.environment}", otel_trace.SpanKind.INTERNAL, attributes
    return None  # an unfinished step that never said what it was


def _event(
    detail: GuardrailStep | ApprovalRequestStep | ApprovalDecisionStep, content: bool
) -> tuple[str, dict[str, Any]]:
    if isinstance(detail, GuardrailStep):
        attributes: dict[str, Any] = {
            "agentbuilder.guardrail.name": detail.name,
            "agentbuilder.guardrail.stage": detail.stage,
            "agentbuilder.guardrail.action": detail.action,
        }
        if detail.detected is not None:
            if detail.detected.kind is not None:
                attributes["agentbuilder.guardrail.kind"] = detail.detected.kind
            attributes["agentbuilder.guardrail.detector"] = detail.detected.detector
            attributes["agentbuilder.guardrail.score"] = detail.detected.score
        if detail.came_from is not None:
            attributes["agentbuilder.guardrail.source"] = detail.came_from.source
        if content and detail.text is not None:
            attributes["agentbuilder.guardrail.text"] = cut(detail.text, CONTENT_BYTES)
        return "agentbuilder.guardrail", attributes
    if isinstance(detail, ApprovalRequestStep):
        return "agentbuilder.approval_request", {
            "gen_ai.tool.name": detail.tool,
            "agentbuilder.approval.id": detail.approval_request_id,
        }
    return "agentbuilder.approval_decision", {
        "gen_ai.tool.name": detail.tool,
        "agentbuilder.approval.id": detail.approval_request_id,
        "agentbuilder.approval.decision": detail.decision,
    }


def _withheld_results(steps: Sequence[Step]) -> dict[str, str]:
    """What stands for a tool result a context guardrail replaced, by call id: the span
    carries what the model was given, not the text the guardrail kept from it."""
    withheld: dict[str, str] = {}
    for step in steps:
        detail = step.reported
        where = detail.came_from if isinstance(detail, GuardrailStep) else None
        if isinstance(detail, GuardrailStep) and where is not None and where.call_id:
            withheld[where.call_id] = f"[withheld by guardrail {detail.name}]"
    return withheld


def _blocked_input(steps: Sequence[Step]) -> str | None:
    """The input guardrail that blocked the run's input, if one did."""
    for step in steps:
        detail = step.reported
        if isinstance(detail, GuardrailStep) and detail.stage == "input":
            return detail.name
    return None


def _input_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        if message.text:
            kind = "tool_call_response" if message.role == "tool" else "text"
            key = "response" if message.role == "tool" else "content"
            parts.append({"type": kind, key: message.text})
        parts.extend(
            {"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        )
        out.append({"role": message.role, "parts": parts})
    return out


def _content(value: Any) -> str:
    return cut(json.dumps(value, ensure_ascii=False), CONTENT_BYTES)


def _start_ns(step: Step) -> int:
    return int(step.started_at.timestamp() * 1e9)


def _end_ns(step: Step, run_ended_ns: int) -> int:
    if step.ended_after_ns is None:  # left unfinished: it lasted as long as the run
        return max(run_ended_ns, _start_ns(step))
    return _start_ns(step) + step.ended_after_ns


def now_ns() -> int:
    return time.time_ns()
