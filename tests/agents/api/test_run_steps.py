"""Run steps end to end (docs/api.md#run-steps): what a run did, in order, as `GET /v1/runs/{id}`
answers it: model calls, tool calls, retrievals and the guardrails that intervened."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from agents.examples import CALCULATOR
from agents.runtime.trace import MAX_BYTES
from tests.fakes.server import Call, Fail, Turn
from tests.support.backends import Backend
from tests.support.guardrails import ATTACK, ATTACK_DETECTED, PROFANE_SPLIT, agent_with, ask
from tests.support.native import fetch_run, invoke
from tests.support.rag import RAG_TOOL, VACATION, VACATION_QUESTION, outputs, rag_agent

STEP_KEYS = {"type", "startedAt", "latencyMs", "status"}
MODEL_CALL_KEYS = STEP_KEYS | {
    "model",
    "tokensUsage",
    "timeToFirstTokenMs",
    "stopReason",
    "costUsd",
}


def steps_of(client: Any, answer: Any) -> list[dict[str, Any]]:
    steps = fetch_run(client, answer)["steps"]
    for step in steps:
        assert set(step) >= STEP_KEYS, step
        assert step["latencyMs"] >= 0
        datetime.fromisoformat(step["startedAt"])
    return steps


def tool_agent(make_agent: Any, backend: Backend, *funcs: str) -> Any:
    tools = [
        {"toolType": "function", "name": f, "description": f"The {f} tool", "funcName": f}
        for f in funcs
    ]
    return make_agent("Calc", "tool", config=backend.config(CALCULATOR["config"], tools=tools))


def test_a_tool_run_records_model_call_tool_call_model_call(
    owner_client: Any, make_agent: Any, backend: Backend, model_usages: list
) -> None:
    config = backend.config(CALCULATOR["config"])
    agent = make_agent("Calc", "tool", config=config)
    backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5})]), Turn(text=["The answer is 15."])
    )
    answer = invoke(owner_client, agent, "invoke", ask("What is 3x5?"))
    assert answer.status == 200

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "model_call"]
    first, tool, last = steps
    for step, usage in zip((first, last), model_usages, strict=True):
        assert set(step) == MODEL_CALL_KEYS
        assert step["status"] == "completed"
        assert step["model"] == backend.model(config)
        assert step["tokensUsage"] == usage.as_dict()
        assert 0 <= step["timeToFirstTokenMs"] <= step["latencyMs"]
    assert first["stopReason"] == "tool_use"
    assert last["stopReason"] == "end_turn"
    assert tool["status"] == "completed"
    assert tool["name"] == "multiply"
    assert {k: float(v) for k, v in json.loads(tool["arguments"]).items()} == {
        "a": 3.0,
        "b": 5.0,
    }
    assert tool["result"] == "15"
    assert "error" not in tool
    assert first["startedAt"] <= tool["startedAt"] <= last["startedAt"]


def test_a_failing_tool_is_a_failed_step_with_its_error(
    owner_client: Any, make_agent: Any, fake_backend: Backend
) -> None:
    agent = tool_agent(make_agent, fake_backend, "divide")
    fake_backend.script(
        Turn(calls=[Call("divide", {"a": 1, "b": 0})]), Turn(text=["You cannot divide by 0."])
    )
    answer = invoke(owner_client, agent, "invoke", ask("What is 1/0?"))
    assert answer.status == 200

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "model_call"]
    tool = steps[1]
    assert tool["status"] == "failed"
    assert tool["name"] == "divide"
    assert "division by zero" in tool["error"]
    assert "result" not in tool


def test_tool_arguments_and_errors_are_cut_at_4_kb(
    owner_client: Any, make_agent: Any, fake_backend: Backend
) -> None:
    zone = "é" * 3000  # 6000 bytes of UTF-8, two to a character
    agent = tool_agent(make_agent, fake_backend, "current_time")
    fake_backend.script(
        Turn(calls=[Call("current_time", {"timezone": zone})]), Turn(text=["No such zone."])
    )
    answer = invoke(owner_client, agent, "invoke", ask("What time is it?"))
    assert answer.status == 200

    [tool] = [s for s in steps_of(owner_client, answer) if s["type"] == "tool_call"]
    assert tool["status"] == "failed"
    for text in (tool["arguments"], tool["error"]):
        assert MAX_BYTES - 1 <= len(text.encode()) <= MAX_BYTES
    assert tool["arguments"].startswith('{"timezone": "')
    assert "unknown time zone" in tool["error"]


@pytest.mark.usefixtures("corpus")
def test_a_rag_run_records_its_retrieval_before_the_model_call(
    owner_client: Any, make_agent: Any, backend: Backend
) -> None:
    agent = rag_agent(make_agent, backend)
    backend.script(Turn(text=["Every full-time employee earns 25 days [1]."]))
    only_hr = "SELECT * FROM SysContent WHERE department = 'HR'"
    answer = invoke(owner_client, agent, "invoke", {**VACATION, "hxqlQuery": only_hr})
    sources = outputs(answer)["sourceNodes"]
    assert sources

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["retrieval", "model_call"]
    retrieval = steps[0]
    assert retrieval["status"] == "completed"
    assert retrieval["query"] == VACATION_QUESTION
    assert retrieval["hxqlQuery"] == only_hr
    assert [h["id"] for h in retrieval["hits"]] == [n["id"] for n in sources]
    assert [h["score"] for h in retrieval["hits"]] == [n["score"] for n in sources]
    assert all("text" not in h for h in retrieval["hits"])


def test_an_input_block_is_the_only_step(
    owner_client: Any, make_agent: Any, fake_backend: Backend
) -> None:
    agent = agent_with(make_agent, fake_backend, "HAIP-Prompt_attack-Medium")
    answer = invoke(owner_client, agent, "invoke", ask(ATTACK))
    assert answer.status == 200

    [step] = steps_of(owner_client, answer)
    assert step["type"] == "guardrail"
    assert step["status"] == "completed"
    assert (step["name"], step["stage"], step["action"]) == (
        "HAIP-Prompt_attack-Medium",
        "input",
        "BLOCKED",
    )
    assert step["detected"] == ATTACK_DETECTED


def test_an_output_block_follows_the_model_call_it_stopped(
    owner_client: Any, make_agent: Any, fake_backend: Backend
) -> None:
    agent = agent_with(make_agent, fake_backend, "HAIP-Profanity")
    fake_backend.script(Turn(text=PROFANE_SPLIT))
    answer = invoke(owner_client, agent, "invoke-stream", ask("How is the answer?"))

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "guardrail"]
    assert (steps[1]["name"], steps[1]["stage"]) == ("HAIP-Profanity", "output")
    # What it found, but not the word: the client never saw it, and may read its runs.
    assert steps[1]["detected"] == {
        "kind": "profanity",
        "detector": "profanity word list",
        "score": 1.0,
    }


def test_a_clean_run_has_no_guardrail_step(
    owner_client: Any, make_agent: Any, backend: Backend
) -> None:
    agent = agent_with(make_agent, backend, "HAIP-Prompt_attack-Medium", "HAIP-Profanity")
    backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5})]), Turn(text=["The answer is 15."])
    )
    answer = invoke(owner_client, agent, "invoke-stream", ask("What is 3x5?"))

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "model_call"]


@pytest.mark.usefixtures("corpus")
def test_the_rag_tool_of_a_tool_agent_is_a_tool_call_around_its_retrieval(
    owner_client: Any, make_agent: Any
) -> None:
    only_faq = "SELECT * FROM SysContent WHERE sys_docType = 'faq'"
    tool = {**RAG_TOOL, "semanticSearchConfig": {"hxqlQuery": only_faq}}
    config = {"llmModelId": "local.demo-v1", "tools": [tool]}
    agent = make_agent("researcher", "tool", config=config)
    answer = invoke(owner_client, agent, "invoke", ask('Search the documents for "passwords"'))
    assert answer.status == 200

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "retrieval", "model_call"]
    call, retrieval = steps[1:3]
    assert call["name"] == "search_documents"
    assert (retrieval["query"], retrieval["hxqlQuery"]) == ("passwords", only_faq)
    assert [h["id"] for h in retrieval["hits"]] == [n["id"] for n in json.loads(call["result"])]


def test_a_nested_task_agent_s_steps_name_the_tool_call_they_ran_in(
    owner_client: Any, make_agent: Any, backend: Backend, review_task: Any
) -> None:
    tool = {
        "toolType": "task_agent",
        "name": "rate_review",
        "description": "Rates the sentiment of a product review",
        "agentId": str(review_task.pk),
    }
    agent = make_agent("ReviewDesk", "tool", config=backend.config(REVIEW_DESK, tools=[tool]))
    arguments = {"product": "Acme kettle", "review": "Boils fast, very positive"}
    backend.script(
        Turn(calls=[Call("rate_review", arguments)]),
        Turn(calls=[Call("task_output", {"sentiment": "positive"})]),
        Turn(text=["The review is positive."]),
    )
    ask_rating = 'Rate the sentiment of the review of "Acme kettle": "Boils fast, very positive"'
    answer = invoke(owner_client, agent, "invoke", ask(ask_rating))
    assert answer.status == 200

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "model_call", "model_call"]
    outer, call, nested, last = steps
    assert call["name"] == "rate_review"
    assert "sentiment" in json.loads(call["result"])
    assert nested["parent"] == 1  # the task agent's model call ran inside the tool call
    assert "parent" not in outer
    assert "parent" not in call
    assert "parent" not in last
    assert call["startedAt"] <= nested["startedAt"]
    assert nested["latencyMs"] <= call["latencyMs"]


def test_a_failed_run_s_steps_end_in_the_step_that_failed(
    owner_client: Any, make_agent: Any, fake_backend: Backend
) -> None:
    config = fake_backend.config(
        CALCULATOR["config"], inferenceConfig={"maxRetries": 0, "timeout": 5}
    )
    agent = make_agent("Calc", "tool", config=config)
    fake_backend.script(Turn(calls=[Call("multiply", {"a": 3, "b": 5})]), Fail(500))
    answer = invoke(owner_client, agent, "invoke-stream", ask("What is 3x5?"))
    assert answer.lines[-1]["type"] == "response.failed"

    steps = steps_of(owner_client, answer)
    assert [s["type"] for s in steps] == ["model_call", "tool_call", "model_call"]
    assert [s["status"] for s in steps] == ["completed", "completed", "failed"]


@pytest.mark.usefixtures("corpus")
def test_a_rag_tool_s_retrieval_names_its_tool_call(owner_client: Any, make_agent: Any) -> None:
    config = {"llmModelId": "local.demo-v1", "tools": [RAG_TOOL]}
    agent = make_agent("researcher", "tool", config=config)
    answer = invoke(owner_client, agent, "invoke", ask('Search the documents for "passwords"'))

    steps = steps_of(owner_client, answer)
    assert [s.get("parent") for s in steps] == [None, None, 1, None]


REVIEW_DESK: dict[str, Any] = {
    "llmModelId": "anthropic.claude-3-haiku-20240307-v1:0",
    "systemPrompt": "You help shop owners read their reviews.",
}
