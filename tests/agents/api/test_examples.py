"""The source document's examples through the HTTP API, on every backend, streamed or not:
Calculator, PersonExtractor, a task agent with schemas, a tool agent calling it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.examples import CALCULATOR
from agents.models import Agent
from tests.fakes.server import Call, Turn
from tests.support.backends import Backend
from tests.support.native import (
    CALL,
    COMPLETED,
    CREATED,
    DELTA,
    REVIEW_TASK,
    completed_run,
    invoke,
    usage_sum,
)

STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
ASK_3X5 = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
PERSON = {"name": "John Doe", "age": 35, "occupation": "software engineer"}
ASK_PERSON = {
    "messages": [{"role": "user", "content": "John Doe is a 35-year-old software engineer"}]
}
REVIEW_INPUTS = {"product": "Acme kettle", "review": "Boils in 2 minutes, very positive."}


def route(base: str, stream: bool) -> str:
    return f"{base}-stream" if stream else base


@STREAMED
def test_calculator_multiplies_3_by_5(
    backend: Backend, stream: bool, calculator: Agent, owner_client: Any, model_usages: list
) -> None:
    # The document's stream: some text, the call, then the answer in two deltas.
    backend.script(
        Turn(
            text=["Okay, I can help", " with that. "],
            calls=[Call("multiply", {"a": 3, "b": 5})],
            usage=(30, 12),
        ),
        Turn(text=["The result of 3 x 5", " is 15."], usage=(48, 9)),
    )

    answer = invoke(owner_client, calculator, route("invoke", stream), ASK_3X5)

    assert answer.status == 200
    [call] = answer.calls
    assert call["name"] == "multiply"
    assert call["arguments"] == {"a": 3, "b": 5}
    assert "15" in answer.final_text
    assert answer.model == backend.model(CALCULATOR["config"])
    assert answer.usage == usage_sum(model_usages)
    if not backend.offline:
        assert answer.usage == {"input_tokens": 78, "output_tokens": 21, "total_tokens": 99}
        assert backend.tool_results(1) == {call["id"]: "15"}
        assert len(backend.fake.requests) == 2
    run = completed_run(owner_client, answer, answer.usage)
    user, assistant, tool, final = run["messages"]
    assert user == {"role": "user", "content": "What is 3x5?"}
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == [call["id"]]
    assert assistant["tool_calls"][0]["function"]["name"] == "multiply"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 3, "b": 5}
    assert tool == {"role": "tool", "tool_call_id": call["id"], "name": "multiply", "content": "15"}
    assert final["role"] == "assistant"
    assert "15" in final["content"]
    assert run["output"] == final["content"]


def test_calculator_stream_matches_the_documented_lines(
    fake_backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))
    fake_backend.script(
        Turn(text=["Okay, I can help", " with that. "], calls=[Call("multiply", {"a": 3, "b": 5})]),
        Turn(text=["The result of 3 x 5", "is 15."]),
    )

    answer = invoke(owner_client, agent, "invoke-stream", ASK_3X5)

    kinds = [(line["type"], line.get("delta") or line.get("name")) for line in answer.lines]
    assert kinds == [
        (CREATED, None),
        (DELTA, "Okay, I can help"),
        (DELTA, " with that. "),
        (CALL, "multiply"),
        (DELTA, "The result of 3 x 5"),
        (DELTA, "is 15."),
        (COMPLETED, None),
    ]
    assert answer.model == fake_backend.model(CALCULATOR["config"])
    assert answer.final_text == "The result of 3 x 5is 15."


@STREAMED
def test_person_extractor_answers_with_the_validated_object(
    backend: Backend,
    stream: bool,
    person_extractor: Agent,
    owner_client: Any,
    model_usages: list,
) -> None:
    backend.script(Turn(calls=[Call("structured_output", PERSON)], usage=(50, 20)))

    answer = invoke(owner_client, person_extractor, route("invoke", stream), ASK_PERSON)

    assert answer.status == 200
    if stream:
        assert [(c["name"], c["arguments"]) for c in answer.calls] == [
            ("structured_output", PERSON)
        ]
        assert answer.lines[-1]["type"] == COMPLETED
    else:
        assert answer.body == PERSON
    if not backend.offline:
        assert len(backend.fake.requests) == 1
        assert backend.forced_tool(0) == "structured_output"
        assert backend.tools(0)["structured_output"]["required"] == ["name"]
    usage = usage_sum(model_usages)
    if not backend.offline:
        assert usage == {"input_tokens": 50, "output_tokens": 20, "total_tokens": 70}
    run = completed_run(owner_client, answer, usage)
    assert run["output"] == PERSON
    assert run["messages"][0] == {"role": "user", "content": ASK_PERSON["messages"][0]["content"]}


def _review_answer(backend: Backend) -> dict[str, Any]:
    # The offline model fills the schema from the rendered prompt: the enum value it names
    # and its first figure.
    return (
        {"sentiment": "positive", "score": 2}
        if backend.offline
        else {"sentiment": "positive", "score": 9}
    )


@STREAMED
def test_task_agent_renders_its_prompt_and_answers_to_its_output_schema(
    backend: Backend, stream: bool, review_task: Agent, owner_client: Any, model_usages: list
) -> None:
    expected = _review_answer(backend)
    backend.script(Turn(calls=[Call("task_output", expected)], usage=(40, 8)))

    answer = invoke(
        owner_client, review_task, route("invoke-task", stream), {"inputs": REVIEW_INPUTS}
    )

    assert answer.status == 200
    # docs/api.md#invoke: invoke-task answers the response object (only a tool agent's
    # structured_output answers with the bare object), and a stream carries the answer.
    if not stream:
        assert answer.body.get("object") == "response", answer.body
    assert json.loads(answer.text) == expected
    if not backend.offline:
        assert backend.forced_tool(0) == "task_output"
        assert backend.system(0) == (
            "Rate the sentiment of this review of Acme kettle: Boils in 2 minutes, very positive."
        )
    usage = usage_sum(model_usages)
    assert answer.usage == usage
    run = completed_run(owner_client, answer, usage)
    assert run["output"] == expected
    assert run["messages"][0] == {"role": "user", "inputs": REVIEW_INPUTS}


@STREAMED
def test_task_agent_without_output_schema_streams_text(
    backend: Backend, stream: bool, make_agent: Any, owner_client: Any
) -> None:
    config = backend.config(REVIEW_TASK)
    del config["outputSchema"]
    agent = make_agent("ReviewRater", "task", config=config)
    backend.script(Turn(text=["Positive", ": it boils fast."], usage=(12, 4)))

    answer = invoke(owner_client, agent, route("invoke-task", stream), {"inputs": REVIEW_INPUTS})

    assert answer.status == 200
    if backend.offline:
        assert answer.text == (
            "Done: Rate the sentiment of this review of Acme kettle: Boils in 2 minutes, "
            "very positive."
        )
    else:
        assert answer.text == "Positive: it boils fast."
        assert answer.usage == {"input_tokens": 12, "output_tokens": 4, "total_tokens": 16}
    assert answer.calls == []
    run = completed_run(owner_client, answer, answer.usage)
    assert run["output"] == answer.text


@STREAMED
def test_tool_agent_calls_a_task_agent_and_counts_its_tokens(
    backend: Backend,
    stream: bool,
    review_task: Agent,
    make_agent: Any,
    owner_client: Any,
    model_usages: list,
) -> None:
    config = backend.config(
        {
            "llmModelId": "anthropic.claude-3-haiku-20240307-v1:0",
            "systemPrompt": "You help shop owners read their reviews.",
            "tools": [
                {
                    "toolType": "task_agent",
                    "name": "rate_review",
                    "description": "Rates the sentiment of a product review",
                    "agentId": str(review_task.pk),
                }
            ],
        }
    )
    agent = make_agent("ReviewDesk", "tool", config=config)
    arguments = {"product": "Acme kettle", "review": "Boils fast, very positive"}
    rating = {"sentiment": "positive"} if backend.offline else {"sentiment": "positive", "score": 8}
    backend.script(
        Turn(calls=[Call("rate_review", arguments)], usage=(100, 10)),
        Turn(calls=[Call("task_output", rating)], usage=(20, 5)),
        Turn(text=["The review is positive."], usage=(7, 3)),
    )
    # The offline model hands quoted strings to string parameters in schema order, and the
    # stored schema keeps the order it was written in: product, then review.
    ask = 'Rate the sentiment of the review of "Acme kettle": "Boils fast, very positive"'

    answer = invoke(
        owner_client,
        agent,
        route("invoke", stream),
        {"messages": [{"role": "user", "content": ask}]},
    )

    assert answer.status == 200
    [call] = answer.calls
    assert call["name"] == "rate_review"
    assert call["arguments"] == arguments
    assert len(model_usages) == 3  # the tool agent twice, the task agent once
    usage = usage_sum(model_usages)
    assert answer.usage == usage
    if not backend.offline:
        assert usage == {"input_tokens": 127, "output_tokens": 18, "total_tokens": 145}
        assert backend.tools(0)["rate_review"] == REVIEW_TASK["inputSchema"]
        assert backend.forced_tool(1) == "task_output"
        assert backend.system(1) == (
            "Rate the sentiment of this review of Acme kettle: Boils fast, very positive"
        )
        results = backend.tool_results(2)
        assert {call_id: json.loads(text) for call_id, text in results.items()} == {
            call["id"]: rating
        }
    run = completed_run(owner_client, answer, usage)
    roles = [m["role"] for m in run["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert json.loads(run["messages"][2]["content"]) == rating
    assert run["messages"][3]["content"] == answer.text
    assert run["agentId"] == str(agent.pk)
