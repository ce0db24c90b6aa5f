"""The exporter's encoder (agents.telemetry.otlp) writes the bytes the SDK's encoder writes,
for the spans a run makes and for any span the SDK's tracer makes (the MCP SDK's)."""

from __future__ import annotations

from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents.runtime.steps import GuardrailStep, ModelCallStep, ToolCallStep
from agents.runtime.trace import Step, Trace
from agents.runtime.tracecontext import RunTrace, SpanRef
from agents.telemetry.otlp import encode
from agents.telemetry.spans import RunFacts, export_run
from tests.support.telemetry import (  # noqa: F401 (the fixture `exported`)
    PARENT_ID,
    TRACE_ID,
    exported,
)


def sdk_spans() -> tuple[ReadableSpan, ...]:
    """Spans of two resources and two scopes, with what the SDK's tracer can give them:
    events, links, a trace state, a remote parent, an error, every attribute type."""
    exporter = InMemorySpanExporter()
    for service in ("one", "two"):
        provider = TracerProvider(resource=Resource({"service.name": service, "n": 7}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        for scope in ("mcp-python-sdk", "other"):
            tracer = provider.get_tracer(scope, "1.2", schema_url="https://example.test/s")
            state = otel_trace.TraceState([("vendor", "x=1")])
            caller = otel_trace.SpanContext(
                int(TRACE_ID, 16), int(PARENT_ID, 16), True, otel_trace.TraceFlags(1), state
            )
            parent = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(caller))
            attributes = {
                "text": "é ∑ " * 50,  # past 127 bytes: a two-byte length
                "empty": "",
                "yes": True,
                "no": False,
                "zero": 0,
                "negative": -5,
                "large": 2**62,
                "ratio": 0.25,
                "names": ("a", "b"),
                "numbers": (1, 2, 3),
                "none": (),
            }
            with tracer.start_as_current_span(
                "tools/call Calculator",
                context=parent,
                kind=otel_trace.SpanKind.SERVER,
                attributes=attributes,
                links=[otel_trace.Link(caller, {"why": "retry"})],
            ) as span:
                span.add_event("progress", {"value": 0.5}, timestamp=1_000)
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, "it broke"))
                with tracer.start_as_current_span("nested", kind=otel_trace.SpanKind.CLIENT):
                    pass
    return exporter.get_finished_spans()


def run_spans(exported: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:  # noqa: F811
    """A run's spans as agents.telemetry.spans makes them, a guardrail's event and a
    failed tool call among them."""
    run = RunTrace.under(SpanRef(int(TRACE_ID, 16), int(PARENT_ID, 16)))
    trace = Trace(run)
    chat = trace.start("model_call", ModelCallStep("gpt-4o-mini", {}))
    usage = {"input_tokens": 20, "output_tokens": 4}
    chat.end("completed", ModelCallStep("gpt-4o-mini", usage, 12, "tool_use", 0.0042))
    tool = trace.start("tool_call")
    tool.end("failed", ToolCallStep("lookup", "{}", error="gone", call_id="c1"))
    guard = Step("guardrail")
    guard.end("completed", GuardrailStep("PII", "output", "BLOCKED"))
    trace.add(guard)
    facts = RunFacts(
        trace=run,
        agent_name="Helper",
        agent_id="a-1",
        version=3,
        provider="openai",
        model="gpt-4o-mini",
        run_id="r-1",
        response_id="resp_1",
        thread_id="t-1",
        environment="default",
        started_ns=1_000_000_000,
        ended_ns=2_000_000_000,
        status="failed",
        usage=usage,
        error_message="it broke",
    )
    export_run(facts, trace.started)
    return exported.get_finished_spans()


def test_the_bytes_are_the_sdk_encoders(exported: InMemorySpanExporter) -> None:  # noqa: F811
    spans = (*run_spans(exported), *sdk_spans())
    assert len(spans) == 3 + 8

    ours = encode(spans)

    assert ours == encode_spans(spans).SerializePartialToString()
    decoded = ExportTraceServiceRequest.FromString(ours)
    assert [len(r.scope_spans) for r in decoded.resource_spans] == [1, 2, 2]


def test_nothing_to_send_is_an_empty_request() -> None:
    assert encode(()) == encode_spans(()).SerializePartialToString() == b""
