"""The call depth (agents.runtime.depth) on every inbound route, and across a task agent run
in-process as a tool: a call past MAX_AGENT_DEPTH is refused with the reason and opens no
run; a header that is no depth is a 400 at the header."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from agents.models import Agent, Run
from agents.runtime.depth import HEADER
from tests.factories import CONFIGS
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn

pytestmark = pytest.mark.django_db

MODEL = "openai/gpt-4o-mini"
TEXT = {"text": "A long text.", "audience": "all"}  # the task agent's inputs
META = "HTTP_" + HEADER.upper().replace("-", "_")
ASK = {"messages": [{"role": "user", "content": "What is 3 x 5?"}]}
# Route (under the agent's latest version, or absolute), body, and which agent it runs.
ROUTES = {
    "invoke": ("invoke", ASK, "calc"),
    "invoke-stream": ("invoke-stream", ASK, "calc"),
    "invoke-task": ("invoke-task", {"inputs": {"text": "hi", "audience": "all"}}, "summary"),
    "respond": ("respond", ASK, "calc"),
    "process": (
        "process",
        {"input": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "stream": False},
        "calc",
    ),
    "chat": ("chat/completions", ASK, "calc"),
    "model chat": ("/v1/chat/completions", {**ASK, "model": "calc"}, "calc"),
    "openai": ("/v1/openai/chat/completions", {**ASK, "model": "calc"}, "calc"),
}


@pytest.fixture
def agents(make_agent: Any) -> dict[str, Agent]:
    return {"calc": make_agent("calc", "tool"), "summary": make_agent("summary", "task")}


def post(client: APIClient, agents: dict[str, Agent], route: str, depth: str) -> Any:
    path, body, name = ROUTES[route]
    if not path.startswith("/"):
        path = f"/v1/agents/{agents[name].pk}/versions/latest/{path}"
    return client.post(path, body, format="json", **{META: depth})


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_call_past_the_limit_is_refused_with_the_reason_and_opens_no_run(
    owner_client: APIClient, agents: dict[str, Agent], route: str
) -> None:
    deep = post(owner_client, agents, route, str(settings.MAX_AGENT_DEPTH + 1))
    malformed = post(owner_client, agents, route, "1e3")

    assert deep.status_code == 400, deep.content
    assert deep["Content-Type"] == "application/json"
    assert f"at most {settings.MAX_AGENT_DEPTH} deep (MAX_AGENT_DEPTH)" in deep.content.decode()
    assert malformed.status_code == 400, malformed.content
    assert HEADER in malformed.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("route", ["invoke", "invoke-task"])
def test_a_call_at_the_limit_runs(
    owner_client: APIClient, agents: dict[str, Agent], route: str
) -> None:
    answer = post(owner_client, agents, route, str(settings.MAX_AGENT_DEPTH))

    assert answer.status_code == 200, answer.content
    assert Run.objects.get().status == "completed"


def test_the_header_must_be_a_whole_number(
    owner_client: APIClient, agents: dict[str, Agent]
) -> None:
    for value in ("-1", "1.5", "x", "99999", "٣"):  # the last: an Arabic-Indic digit
        answer = post(owner_client, agents, "invoke", value)
        assert answer.status_code == 400, value
        assert answer.json()["detail"][0]["loc"] == ["header", HEADER]
    assert not Run.objects.exists()


@pytest.mark.parametrize("method", ["message/send", "SendMessage"])
def test_a2a_refuses_a_call_past_the_limit_as_an_invalid_request(
    owner_client: APIClient, agents: dict[str, Agent], method: str
) -> None:
    if method == "message/send":
        part: dict[str, Any] = {"kind": "text", "text": "hi"}
        message = {"kind": "message", "messageId": "m-1", "role": "user", "parts": [part]}
    else:
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    body = {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"message": message}}

    for depth in (str(settings.MAX_AGENT_DEPTH + 1), "x"):
        answer = owner_client.post("/v1/a2a/calc", body, format="json", **{META: depth})
        error = answer.json()["error"]
        assert error["code"] == -32600, error
        assert ("MAX_AGENT_DEPTH" if depth != "x" else HEADER) in error["message"]
    assert not Run.objects.exists()


# ---------------------------------------------------------------- in-process


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with override_settings(LLM_OFFLINE=False):
            yield fake


def delegator(make_agent: Any) -> Agent:
    """A tool agent whose one tool is a task agent, run in this process."""
    task = make_agent(
        "summary", "task", config={**CONFIGS["task"], "llmModelId": "openai/gpt-4o-mini"}
    )
    config = {
        "llmModelId": "openai/gpt-4o-mini",
        "systemPrompt": "Summarise with the tool.",
        "inferenceConfig": {"maxRetries": 0},
        "tools": [
            {
                "toolType": "task_agent",
                "name": "summarise",
                "description": "Summarises a text.",
                "agentId": str(task.pk),
            }
        ],
    }
    return make_agent("delegator", "tool", config=config)


def invoke_at(client: APIClient, agent: Agent, depth: int) -> Run:
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    answer = client.post(url, ASK, format="json", **{META: str(depth)})
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=answer["X-Run-Id"])


def test_a_task_agent_run_as_a_tool_is_one_deeper_and_refused_past_the_limit(
    owner_client: APIClient, make_agent: Any, openai_fake: FakeOpenAI
) -> None:
    agent = delegator(make_agent)
    limit = settings.MAX_AGENT_DEPTH
    summarise = Turn(calls=[Call("summarise", TEXT)])

    # One short of the limit: the task agent runs (its own model call), at the limit.
    openai_fake.script(summarise, Turn(text=["Short."]), Turn(text=["It says: short."]))
    ran = invoke_at(owner_client, agent, limit - 1)
    # At the limit: the task agent would run one deeper, and is refused as a tool failure.
    openai_fake.script(summarise, Turn(text=["It could not be summarised."]))
    refused = invoke_at(owner_client, agent, limit)

    (ran_step,) = [s for s in ran.steps if s["type"] == "tool_call"]
    assert "error" not in ran_step, ran_step
    assert ran.status == "completed"
    (refused_step,) = [s for s in refused.steps if s["type"] == "tool_call"]
    assert f"at most {limit} deep (MAX_AGENT_DEPTH)" in refused_step["error"]
    assert f"depth {limit + 1}" in refused_step["error"]
    assert refused.status == "completed"  # the model was told, and answered
    assert len(openai_fake.requests) == 5  # the refused task agent made no model call


@override_settings(MAX_AGENT_DEPTH=0)
def test_with_a_limit_of_0_no_agent_calls_another(
    owner_client: APIClient, make_agent: Any, openai_fake: FakeOpenAI
) -> None:
    agent = delegator(make_agent)
    openai_fake.script(Turn(calls=[Call("summarise", TEXT)]), Turn(text=["No."]))

    run = invoke_at(owner_client, agent, 0)

    (step,) = [s for s in run.steps if s["type"] == "tool_call"]
    assert "at most 0 deep" in step["error"]
