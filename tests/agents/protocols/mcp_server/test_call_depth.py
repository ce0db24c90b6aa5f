"""Agents calling agents stop at MAX_AGENT_DEPTH (agents.runtime.depth): an agent registered
as an MCP server on its own /v1/mcp, against a live uvicorn serving agentbuilder.asgi in
this process, with the fake OpenAI-compatible model scripted to call that tool every time.

Before the depth travelled, one invoke made runs until something else ran out (417 in 30 s
in the probe); now it makes exactly MAX_AGENT_DEPTH + 1, counted, and the deepest run's
tool call says why it went no deeper.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.conf import settings
from django.test import override_settings

from agents.mcp_client import cache
from agents.mcp_registry.services import mcp_server_create
from agents.models import Agent, Environment, Run
from agents.runtime.depth import HEADER
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.live import platform_port  # noqa: F401 (the fixture `port`)
from tests.support.mcp_server import LIVE, bearer

# A busy machine's margin for six nested runs, each waiting on the next (no bound asserted).
SECONDS = 300


@pytest.fixture
def openai_fake(settings: Any) -> Iterator[FakeOpenAI]:
    """The fake model, LLM_OFFLINE off, and loopback allowed to MCP (the live server runs in
    this process and reads these settings and this environment)."""
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    cache.clear()
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with override_settings(LLM_OFFLINE=False):
            yield fake
    cache.clear()


def looper(port: int, owner: Any, env: Environment, make_agent: Any) -> Agent:
    """A tool agent whose one MCP server is this platform's /v1/mcp, as its owner: it sees
    itself as a tool."""
    server = mcp_server_create(
        user=owner,
        environment=env,
        name="self",
        url=f"http://127.0.0.1:{port}/v1/mcp",
        headers=bearer(owner),
        timeout=SECONDS,
    )
    config = {
        "llmModelId": "openai/gpt-4o-mini",
        "systemPrompt": "Ask Looper.",
        "inferenceConfig": {"maxRetries": 0},
        "tools": [{"toolType": "mcp", "mcpServerReferences": [{"id": str(server.pk)}]}],
    }
    return make_agent("Looper", "tool", config=config)


def tool_messages(run: Run) -> list[str]:
    return [str(m["content"]) for m in run.messages if m.get("role") == "tool"]


@LIVE
def test_an_agent_that_calls_itself_over_mcp_stops_at_the_limit(
    port: int, owner: Any, env: Environment, make_agent: Any, openai_fake: FakeOpenAI
) -> None:
    agent = looper(port, owner, env, make_agent)
    limit = settings.MAX_AGENT_DEPTH
    # Every run's first model call calls Looper; its second answers. Runs at depths 0 to
    # `limit` call (limit + 1 calls), the call from the deepest is refused, and each run
    # then answers in turn, the deepest first.
    calls = [Turn(calls=[Call("Looper", {"message": "again"})]) for _ in range(limit + 1)]
    answers = [Turn(text=[f"answer {n}"]) for n in range(limit + 1)]
    openai_fake.script(*calls, *answers)

    response = httpx2.post(
        f"http://127.0.0.1:{port}/v1/agents/{agent.pk}/versions/latest/invoke",
        json={"messages": [{"role": "user", "content": "Go."}]},
        headers=bearer(owner),
        timeout=SECONDS,
    )

    assert response.status_code == 200, response.text
    runs = list(Run.objects.order_by("started_at"))
    assert len(runs) == limit + 1
    assert [r.protocol for r in runs] == ["native"] + ["mcp"] * limit
    assert {r.status for r in runs} == {"completed"}
    deepest = runs[-1]
    (refused,) = tool_messages(deepest)
    assert "call_too_deep" in refused
    assert f"at most {limit} deep (MAX_AGENT_DEPTH)" in refused
    # Each shallower run got its callee's answer back as its tool result.
    for run in runs[:-1]:
        assert "call_too_deep" not in " ".join(tool_messages(run))
    assert response.json()["output"][-1]["content"][0]["text"] == f"answer {limit}"
    assert len(openai_fake.requests) == 2 * (limit + 1)


@LIVE
def test_a_call_past_the_limit_over_mcp_is_a_tool_error_and_no_run(
    port: int, owner: Any, make_agent: Any
) -> None:
    make_agent("Calculator", "tool")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "Calculator", "arguments": {"message": "What is 3 x 5?"}},
    }
    headers = {**bearer(owner), "Accept": "application/json, text/event-stream"}
    deep = str(settings.MAX_AGENT_DEPTH + 1)

    refused = httpx2.post(
        f"http://127.0.0.1:{port}/v1/mcp", json=body, headers={**headers, HEADER: deep}
    )
    malformed = httpx2.post(
        f"http://127.0.0.1:{port}/v1/mcp", json=body, headers={**headers, HEADER: "-1"}
    )

    assert refused.status_code == 200
    (data,) = [line[5:] for line in refused.text.splitlines() if line.startswith("data:")]
    result = json.loads(data)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "call_too_deep"
    assert "MAX_AGENT_DEPTH" in result["structuredContent"]["error"]["message"]
    assert malformed.status_code == 400
    assert malformed.json()["detail"][0]["loc"] == ["header", HEADER]
    assert not Run.objects.exists()
