"""One trace across two processes, through a real OTLP/HTTP receiver (tests/fakes/otlp.py):
a tool agent here calls, as its MCP tool, the Calculator on our own /v1/mcp of a second
server process. Both export to the receiver; the caller's `traceparent` is the trace of
all their spans, and the remote `invoke_agent` descends from the local `execute_tool` (the
MCP call carried it in `params._meta.traceparent`, and our MCP server read it there)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rest_framework.test import APIClient

from agents.examples import CALCULATOR
from agents.mcp_client import cache
from agents.mcp_registry.services import mcp_server_create
from agents.models import Agent, Environment, Run
from agents.telemetry import spans
from tests.fakes.openai import FakeOpenAI
from tests.fakes.otlp import OtlpReceiver, ReceivedSpan
from tests.fakes.server import Call, Turn
from tests.live import server_process
from tests.support.mcp_server import LIVE, bearer
from tests.support.telemetry import PARENT_ID, TRACE_ID, TRACEPARENT

MODEL = "openai/gpt-4o-mini"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    """The receiver; this process's runs export to it over OTLP/HTTP."""
    with OtlpReceiver() as receiving:
        exporter = OTLPSpanExporter(endpoint=f"{receiving.endpoint}/v1/traces")
        spans.use_processor(SimpleSpanProcessor(exporter))
        try:
            yield receiving
        finally:
            spans.use_processor(None)


@pytest.fixture
def model(settings: Any) -> Iterator[FakeOpenAI]:
    """This process's model, and loopback allowed to MCP (the other process is there)."""
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    cache.clear()
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with override_settings(LLM_OFFLINE=False):
            yield fake
    cache.clear()


def caller_of_remote(port: int, owner: Any, env: Environment, make_agent: Any) -> Agent:
    server = mcp_server_create(
        user=owner,
        environment=env,
        name="remote",
        url=f"http://127.0.0.1:{port}/v1/mcp",
        headers=bearer(owner),
        timeout=120,
    )
    config = {
        "llmModelId": MODEL,
        "systemPrompt": "Ask the Calculator.",
        "inferenceConfig": {"maxRetries": 0},
        "tools": [{"toolType": "mcp", "mcpServerReferences": [{"id": str(server.pk)}]}],
    }
    return make_agent("Caller", "tool", config=config)


def ancestors(span: ReceivedSpan, by_id: dict[str, ReceivedSpan]) -> list[ReceivedSpan]:
    chain = []
    while span.parent_id in by_id:
        span = by_id[span.parent_id]
        chain.append(span)
    return chain


@LIVE
def test_one_trace_across_an_mcp_call_to_a_second_server_process(
    owner: Any,
    env: Environment,
    owner_client: APIClient,
    make_agent: Any,
    model: FakeOpenAI,
    receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])  # the remote's, offline
    exporting = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "remote-agentbuilder",
        "OTEL_BSP_SCHEDULE_DELAY": "50",  # ms: the test waits for its batch, not 5 s
    }
    with server_process(tmp_path / "remote.log", **exporting) as remote:
        caller = caller_of_remote(remote.port, owner, env, make_agent)
        ask = Call("Calculator", {"message": "What is 6 x 7?"})
        model.script(Turn(calls=[ask]), Turn(text=["It is 42."]))
        url = f"/v1/agents/{caller.pk}/versions/latest/invoke"

        answer = owner_client.post(
            url,
            {"messages": [{"role": "user", "content": "6 x 7?"}]},
            "json",
            HTTP_TRACEPARENT=TRACEPARENT,
        )

        assert answer.status_code == 200, answer.content
        received = receiver.wait_for(2, "invoke_agent ")
    runs = {run.protocol: run for run in Run.objects.all()}
    assert runs["native"].trace_id == runs["mcp"].trace_id == TRACE_ID
    assert runs["mcp"].status == "completed", runs["mcp"].error
    ours = [s for s in received if s.trace_id == TRACE_ID]
    by_id = {s.span_id: s for s in ours}
    (local,) = [s for s in ours if s.name == "invoke_agent Caller"]
    (remote_run,) = [s for s in ours if s.name == "invoke_agent Calculator"]
    (tool,) = [s for s in ours if s.name == "execute_tool Calculator"]
    assert local.parent_id == PARENT_ID
    assert (local.service, remote_run.service) == ("agentbuilder", "remote-agentbuilder")
    assert tool.parent_id == local.span_id
    assert tool in ancestors(remote_run, by_id)
    assert tool.attributes["gen_ai.tool.name"] == "Calculator"
    assert remote_run.attributes["gen_ai.agent.name"] == "Calculator"
    # The remote run's own steps, in the same trace under it.
    remote_chats = [s for s in ours if s.name.startswith("chat ") and s.service != "agentbuilder"]
    assert remote_chats
    assert all(remote_run in ancestors(s, by_id) for s in remote_chats)
