"""Failures after the run began (docs/api.md#run-failures): a stream ends with response.failed, a
non-streaming call answers 502 (504 on a timeout); the run is failed either way."""

from __future__ import annotations

from typing import Any

import pytest

from agents.examples import CALCULATOR
from agents.models import Agent, Run
from tests.fakes.server import Call, Fail, Turn
from tests.support.backends import Backend
from tests.support.native import FAILED, fetch_run, invoke, no_run_in_progress

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
# No retries: a refused call fails at once; a short timeout: a slow one fails fast.
IMPATIENT = {"maxTokens": 4000, "maxRetries": 0, "timeout": 0.5}

FAILURES = {
    "error mid-stream": (Turn(text=["Partial ", "answer ", "more"], error_after=2), 502),
    "server error": (Fail(500), 502),
    "throttled": (Fail(429), 502),
    "timeout": (Turn(text=["late"], delay=3), 504),
}


@pytest.fixture
def impatient(fake_backend: Backend, make_agent: Any) -> Agent:
    config = fake_backend.config(CALCULATOR["config"], inferenceConfig=IMPATIENT)
    return make_agent("Calculator", "tool", config=config)


def failed_run(client: Any, run_id: str) -> dict[str, Any]:
    run = client.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "failed", run
    assert run["completedAt"] is not None
    assert run["latencyMs"] >= 0
    assert set(run["error"]) == {"code", "message"}
    no_run_in_progress()
    return run


@pytest.mark.parametrize("case", list(FAILURES))
def test_provider_failure_ends_the_stream_with_response_failed(
    case: str, fake_backend: Backend, impatient: Agent, owner_client: Any
) -> None:
    fake_backend.script(FAILURES[case][0])

    answer = invoke(owner_client, impatient, "invoke-stream", ASK)

    assert answer.status == 200
    last = answer.lines[-1]
    assert last["type"] == FAILED
    error = last["response"]["error"]
    assert error["message"]
    if case == "timeout":
        assert error["code"] == "provider_timeout"
    if case == "error mid-stream":
        assert answer.text == "Partial "
    run = failed_run(owner_client, answer.run_id)
    assert run["error"] == error
    assert run["tokensUsage"] == last["response"]["usage"]
    assert run["messages"][0] == {"role": "user", "content": "What is 3x5?"}


# A whole call asks its model for a whole answer (docs/architecture.md#non-streamed-calls):
# only a streamed one has a middle to break in.
@pytest.mark.parametrize("case", [case for case in FAILURES if case != "error mid-stream"])
def test_provider_failure_on_invoke_is_502_or_504(
    case: str, fake_backend: Backend, impatient: Agent, owner_client: Any
) -> None:
    script, status = FAILURES[case]
    fake_backend.script(script)

    answer = invoke(owner_client, impatient, "invoke", ASK)

    assert answer.status == status
    assert set(answer.body) == {"detail"}
    assert isinstance(answer.body["detail"], str)
    assert answer.body["detail"]
    run = failed_run(owner_client, answer.run_id)
    if status == 504:
        assert run["error"]["code"] == "provider_timeout"


def test_provider_failure_inside_a_task_agent_tool_fails_the_run(
    fake_backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    task = make_agent(
        "Summariser",
        "task",
        config=fake_backend.config(
            {
                "llmModelId": "x",
                "systemPrompt": "Summarise: {{ text }}",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "inferenceConfig": IMPATIENT,
            }
        ),
    )
    tool = {"toolType": "task_agent", "name": "summarise", "description": "Summarises a text"}
    agent = make_agent(
        "Desk",
        "tool",
        config=fake_backend.config(
            {"llmModelId": "x", "tools": [{**tool, "agentId": str(task.pk)}]},
            inferenceConfig=IMPATIENT,
        ),
    )
    fake_backend.script(
        Turn(calls=[Call("summarise", {"text": "Kettles boil."})], usage=(10, 2)), Fail(500)
    )

    answer = invoke(owner_client, agent, "invoke-stream", ASK)

    assert [c["name"] for c in answer.calls] == ["summarise"]
    assert answer.lines[-1]["type"] == FAILED
    run = failed_run(owner_client, answer.run_id)
    assert run["tokensUsage"]["input_tokens"] >= 10


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_a_model_that_never_stops_calling_tools_fails_with_max_iterations(
    stream: bool, fake_backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    config = fake_backend.config(CALCULATOR["config"], maxIterations=2)
    agent = make_agent("Calculator", "tool", config=config)
    assert fake_backend.fake is not None
    fake_backend.fake.fallback = Turn(calls=[Call("multiply", {"a": 1, "b": 2})], usage=(5, 1))

    answer = invoke(owner_client, agent, "invoke-stream" if stream else "invoke", ASK)

    assert len(fake_backend.fake.requests) == 2
    if stream:
        assert [c["name"] for c in answer.calls] == ["multiply", "multiply"]
        assert answer.lines[-1]["type"] == FAILED
        assert answer.lines[-1]["response"]["error"]["code"] == "max_iterations"
        assert answer.lines[-1]["response"]["usage"]["total_tokens"] == 12
    else:
        assert answer.status >= 400
        assert "max_iterations" in answer.body["detail"]
    run = failed_run(owner_client, answer.run_id)
    assert run["error"]["code"] == "max_iterations"
    assert run["tokensUsage"] == {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    roles = [m["role"] for m in run["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    assert fetch_run(owner_client, answer)["agentId"] == str(agent.pk)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_tool_agent_whose_task_agent_was_deleted_never_answers_500(
    stream: bool, owner_client: Any, make_agent: Any
) -> None:
    task = make_agent("ReviewRater", "task")
    tool = {"toolType": "task_agent", "name": "summarise", "description": "Summarises a text"}
    agent = make_agent(
        "Desk",
        "tool",
        config={"llmModelId": "local.demo-v1", "tools": [{**tool, "agentId": str(task.pk)}]},
    )
    assert owner_client.delete(f"/v1/agents/{task.pk}").status_code == 200
    ask = {"messages": [{"role": "user", "content": 'Summarise "Kettles boil water."'}]}

    # docs/api.md#errors: never a 500 for what a client can do; docs/api.md#invoke-stream:
    # a stream ends with response.completed or response.failed (`invoke` checks both).
    answer = invoke(owner_client, agent, "invoke-stream" if stream else "invoke", ask)

    no_run_in_progress()
    [run] = Run.objects.filter(agent=agent)
    assert run.status in ("completed", "failed"), (run.status, run.error)
    if "X-Run-Id" in answer.headers:
        assert answer.run_id == str(run.pk)
