"""A run's spans (agents.telemetry.spans) in the SDK's in-memory exporter: built from a
trace of steps made here (no database), then from real runs of the offline Calculator."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rest_framework.test import APIClient

from agents.examples import CALCULATOR
from agents.llm.base import Message
from agents.models import Run
from agents.runtime.steps import (
    ContextSource,
    Detected,
    GuardrailStep,
    ModelCallStep,
    RetrievalStep,
    ToolCallStep,
)
from agents.runtime.trace import Step, Trace
from agents.runtime.tracecontext import RunTrace, SpanRef
from agents.telemetry import spans as exporting
from agents.telemetry.spans import CONTENT_BYTES, RunFacts, export_run
from tests.support.guardrails import ATTACK
from tests.support.rag import VACATION, corpus, rag_agent  # noqa: F401 (the fixture `corpus`)
from tests.support.telemetry import (  # noqa: F401 (the fixture `exported`)
    PARENT_ID,
    TRACE_ID,
    TRACEPARENT,
    by_name,
    exported,
    parent_of,
)

CALLER = SpanRef(int(TRACE_ID, 16), int(PARENT_ID, 16))
SECRET = "the account number is 12345"


def facts(trace: RunTrace, **changed: Any) -> RunFacts:
    values: dict[str, Any] = {
        "trace": trace,
        "agent_name": "Helper",
        "agent_id": "a-1",
        "version": 3,
        "provider": "openai",
        "model": "gpt-4o-mini",
        "run_id": "r-1",
        "response_id": "resp_1",
        "thread_id": "thread-7",
        "environment": "default",
        "started_ns": 1_000_000_000,
        "ended_ns": 9_000_000_000_000_000_000,
        "status": "completed",
        "usage": {"input_tokens": 30, "output_tokens": 9},
        "providers": {"gpt-4o-mini": "openai", "claude": "bedrock"},
        "datastores": frozenset({"search_docs"}),
        "messages": (Message("user", "Look it up."),),
        "answer": "Found it.",
    }
    return RunFacts(**(values | changed))


def steps_of_a_run(trace: Trace) -> dict[str, Step]:
    """A model call, a tool call that runs a nested model call (a task agent), the tool's
    result replaced by a context guardrail, a search and a tool call that failed."""
    chat = trace.start("model_call", ModelCallStep("gpt-4o-mini", {}))
    usage = {"input_tokens": 20, "output_tokens": 4}
    chat.end("completed", ModelCallStep("gpt-4o-mini", usage, 12, "tool_use", 0.0042))
    tool = trace.start("tool_call")
    with trace.within(tool):
        current = otel_trace.get_current_span().get_span_context()
        assert trace.root is not None
        assert (current.trace_id, current.span_id) == (trace.root.trace_id, tool.span_id)
        nested = trace.start("model_call", ModelCallStep("claude", {}))
        nested.end("failed", ModelCallStep("claude", {}, error="throttled"))
    assert not otel_trace.get_current_span().get_span_context().is_valid
    tool.end("completed", ToolCallStep("lookup", '{"q": "acct"}', result=SECRET, call_id="c1"))
    guard = Step("guardrail")
    where = ContextSource("tool_result", tool="lookup", call_id="c1")
    found = Detected("pii", "rules", 0.9)
    guard.end("completed", GuardrailStep("HAIP-PII", "context", "REPLACED", where, SECRET, found))
    trace.add(guard)
    search = trace.start("retrieval")
    search.end("completed", RetrievalStep("acct", "", [{"chunkId": "k"}]))
    broken = trace.start("tool_call")
    broken.end("failed", ToolCallStep("search_docs", "{}", error="index gone", call_id="c2"))
    return {"chat": chat, "tool": tool, "nested": nested, "search": search, "broken": broken}


def test_spans_are_named_parented_and_attributed_as_the_genai_conventions_say(
    exported: InMemorySpanExporter,  # noqa: F811
) -> None:
    run = RunTrace.under(CALLER)
    trace = Trace(run)
    steps = steps_of_a_run(trace)

    export_run(facts(run), trace.started)

    spans = by_name(exported)
    assert sorted(spans) == [
        "chat claude",
        "chat gpt-4o-mini",
        "execute_tool lookup",
        "execute_tool search_docs",
        "invoke_agent Helper",
        "retrieval default",
    ]
    assert {s.context.trace_id for s in exported.get_finished_spans()} == {CALLER.trace_id}
    (root,) = spans["invoke_agent Helper"]
    assert (root.context.span_id, parent_of(root)) == (run.span_id, CALLER.span_id)
    assert root.attributes is not None
    assert dict(root.attributes) | {"agentbuilder.run.id": "r-1"} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Helper",
        "gen_ai.agent.id": "a-1",
        "gen_ai.agent.version": "3",
        "gen_ai.conversation.id": "thread-7",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.id": "resp_1",
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 9,
        "agentbuilder.run.id": "r-1",
        "agentbuilder.run.status": "completed",
        "agentbuilder.environment": "default",
    }
    (chat,) = spans["chat gpt-4o-mini"]
    assert (chat.context.span_id, parent_of(chat)) == (steps["chat"].span_id, run.span_id)
    assert chat.kind == otel_trace.SpanKind.CLIENT
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.usage.input_tokens"] == 20
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chat.attributes["agentbuilder.cost_usd"] == 0.0042
    assert chat.end_time is not None
    assert chat.start_time is not None
    assert chat.end_time >= chat.start_time
    (tool,) = spans["execute_tool lookup"]
    assert tool.attributes is not None
    assert (tool.context.span_id, parent_of(tool)) == (steps["tool"].span_id, run.span_id)
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "extension",
    }
    (nested,) = spans["chat claude"]  # the task agent's model call, inside the tool call
    assert parent_of(nested) == steps["tool"].span_id
    assert nested.attributes is not None
    assert nested.attributes["gen_ai.provider.name"] == "bedrock"
    assert nested.status.status_code == otel_trace.StatusCode.ERROR
    (search,) = spans["retrieval default"]
    assert search.attributes is not None
    assert search.attributes["gen_ai.data_source.id"] == "default"
    assert search.attributes["agentbuilder.retrieval.hits"] == 1
    (broken,) = spans["execute_tool search_docs"]
    assert broken.attributes is not None
    assert broken.attributes["gen_ai.tool.type"] == "datastore"
    assert broken.status.status_code == otel_trace.StatusCode.ERROR
    assert broken.status.description == "index gone"
    (event,) = root.events
    assert event.name == "agentbuilder.guardrail"
    assert event.attributes is not None
    assert dict(event.attributes) == {
        "agentbuilder.guardrail.name": "HAIP-PII",
        "agentbuilder.guardrail.stage": "context",
        "agentbuilder.guardrail.action": "REPLACED",
        "agentbuilder.guardrail.kind": "pii",
        "agentbuilder.guardrail.detector": "rules",
        "agentbuilder.guardrail.score": 0.9,
        "agentbuilder.guardrail.source": "tool_result",
    }
    text = json.dumps([dict(s.attributes or {}) for s in exported.get_finished_spans()])
    for content in ("Look it up", "acct", SECRET):
        assert content not in text


def test_content_only_when_opted_in_and_after_the_guardrails(
    exported: InMemorySpanExporter,  # noqa: F811
    settings: Any,
) -> None:
    settings.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = True
    run = RunTrace.under(None)
    trace = Trace(run)
    steps_of_a_run(trace)

    export_run(facts(run, answer="x" * (3 * CONTENT_BYTES)), trace.started)

    spans = by_name(exported)
    (root,) = spans["invoke_agent Helper"]
    assert root.parent is None  # no caller: a trace of its own
    assert root.attributes is not None
    inputs = json.loads(str(root.attributes["gen_ai.input.messages"]))
    assert inputs == [{"role": "user", "parts": [{"type": "text", "content": "Look it up."}]}]
    # Sizes capped: the answer's JSON cut, never past the limit.
    assert len(str(root.attributes["gen_ai.output.messages"]).encode()) == CONTENT_BYTES
    (tool,) = spans["execute_tool lookup"]
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"q": "acct"}'
    # The model was given the guardrail's notice, not what the tool said.
    assert tool.attributes["gen_ai.tool.call.result"] == "[withheld by guardrail HAIP-PII]"
    (search,) = spans["retrieval default"]
    assert search.attributes is not None
    assert search.attributes["gen_ai.retrieval.query.text"] == "acct"
    (event,) = root.events
    assert event.attributes is not None
    assert event.attributes["agentbuilder.guardrail.text"] == SECRET  # content: opted in


def test_a_caller_that_does_not_sample_its_trace_gets_no_spans(
    exported: InMemorySpanExporter,  # noqa: F811
) -> None:
    run = RunTrace.under(SpanRef(CALLER.trace_id, CALLER.span_id, sampled=False))
    trace = Trace(run)
    steps_of_a_run(trace)

    export_run(facts(run), trace.started)

    assert exported.get_finished_spans() == ()


def test_without_an_endpoint_or_with_the_sdk_disabled_nothing_is_set_up(settings: Any) -> None:
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
    exporting.use_processor(None)  # as the settings say
    assert not exporting.enabled()
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:4318"
    settings.OTEL_SDK_DISABLED = True
    exporting.use_processor(None)
    assert not exporting.enabled()
    exporting.use_processor(None)


# ---------------------------------------------------------------- real runs

ASK = {"messages": [{"role": "user", "content": "What is 3 x 5?"}], "threadId": "t-42"}


@pytest.mark.django_db
def test_a_run_exports_its_steps_as_spans_under_the_callers_span(
    owner_client: APIClient,
    make_agent: Any,
    exported: InMemorySpanExporter,  # noqa: F811
) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"

    answer = owner_client.post(url, ASK, format="json", HTTP_TRACEPARENT=TRACEPARENT)

    assert answer.status_code == 200, answer.content
    run = Run.objects.get(pk=answer["X-Run-Id"])
    assert run.trace_id == TRACE_ID
    spans = by_name(exported)
    (root,) = spans["invoke_agent Calculator"]
    assert f"{parent_of(root):016x}" == PARENT_ID
    assert answer["traceparent"] == f"00-{TRACE_ID}-{root.context.span_id:016x}-01"
    assert root.attributes is not None
    assert root.attributes["gen_ai.conversation.id"] == "t-42"
    assert root.attributes["gen_ai.agent.id"] == str(agent.pk)
    assert len(spans["chat local.demo-v1"]) == 2
    (tool,) = spans["execute_tool multiply"]
    assert tool.attributes is not None
    tool_step = next(s for s in run.steps if s["type"] == "tool_call")
    assert tool.attributes["gen_ai.tool.call.id"] == tool_step["callId"]
    for span in [*spans["chat local.demo-v1"], tool]:
        assert parent_of(span) == root.context.span_id
    assert "gen_ai.input.messages" not in root.attributes
    assert "gen_ai.tool.call.arguments" not in tool.attributes


@pytest.mark.django_db
def test_a_blocked_input_is_an_event_and_not_exported_as_content(
    owner_client: APIClient,
    make_agent: Any,
    exported: InMemorySpanExporter,  # noqa: F811
    settings: Any,
) -> None:
    settings.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = True
    config = {**CALCULATOR["config"], "guardrails": ["HAIP-Prompt_attack-Medium"]}
    agent = make_agent("Guarded", "tool", config=config)
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"

    answer = owner_client.post(url, {"messages": [{"role": "user", "content": ATTACK}]}, "json")

    assert answer.status_code == 200, answer.content
    (root,) = by_name(exported)["invoke_agent Guarded"]
    (event,) = root.events
    assert event.attributes is not None
    assert event.attributes["agentbuilder.guardrail.stage"] == "input"
    assert event.attributes["agentbuilder.guardrail.action"] == "BLOCKED"
    assert root.attributes is not None
    assert ATTACK not in str(root.attributes["gen_ai.input.messages"])
    assert "withheld by guardrail HAIP-Prompt_attack-Medium" in str(
        root.attributes["gen_ai.input.messages"]
    )
    output = json.loads(str(root.attributes["gen_ai.output.messages"]))
    run = Run.objects.get(pk=answer["X-Run-Id"])
    assert output[0]["parts"][0]["content"] == run.output["answer"]  # the guardrail's message


@pytest.mark.django_db
def test_a_rag_agents_search_is_a_retrieval_span_under_its_run(
    owner_client: APIClient,
    make_agent: Any,
    corpus: Any,  # noqa: F811
    env: Any,
    exported: InMemorySpanExporter,  # noqa: F811
    settings: Any,
) -> None:
    settings.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = True
    agent = rag_agent(make_agent)
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    department = "SELECT * FROM SysContent WHERE department = 'HR'"

    answer = owner_client.post(
        url, {**VACATION, "hxqlQuery": department}, "json", HTTP_TRACEPARENT=TRACEPARENT
    )

    assert answer.status_code == 200, answer.content
    run = Run.objects.get(pk=answer["X-Run-Id"])
    spans = by_name(exported)
    (root,) = spans["invoke_agent document-helper"]
    (search,) = spans[f"retrieval {env.name}"]
    assert f"{parent_of(root):016x}" == PARENT_ID
    assert search.context.trace_id == root.context.trace_id == int(TRACE_ID, 16)
    assert parent_of(search) == root.context.span_id
    step = next(s for s in run.steps if s["type"] == "retrieval")
    assert search.attributes is not None
    assert dict(search.attributes) == {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": env.name,
        "agentbuilder.retrieval.hits": len(step["hits"]),
        "agentbuilder.retrieval.filter": department,
        "gen_ai.retrieval.query.text": VACATION["messages"][0]["content"],
    }
    assert len(step["hits"]) == 1  # the handbook alone is HR's
    assert search.start_time is not None
    assert root.start_time is not None
    assert root.start_time <= search.start_time
