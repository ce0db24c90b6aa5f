"""The non-streaming answer object of docs/api.md#invoke, and what every answer carries."""

from __future__ import annotations

import time
from typing import Any

from agents.models import Agent
from agents.protocols.native.encoder import InvokeResponse
from tests.fakes.server import Call, Turn
from tests.support.backends import Backend
from tests.support.native import RESPONSE_OBJECT, check, completed_run, invoke, usage_sum

ASK = {"messages": [{"role": "user", "content": "What is 3x5 and 2x4?"}]}


def test_invoke_answers_a_response_object_with_the_calls_then_the_message(
    backend: Backend, calculator: Agent, owner_client: Any, model_usages: list
) -> None:
    backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}), Call("multiply", {"a": 2, "b": 4})]),
        Turn(text=["3 x 5 is 15 ", "and 2 x 4 is 8."]),
    )
    before = int(time.time())

    answer = invoke(owner_client, calculator, "invoke", ASK)

    assert answer.status == 200
    body = answer.body
    check(body, RESPONSE_OBJECT)
    InvokeResponse.model_validate(body)  # what the OpenAPI document says it is
    assert body["object"] == "response"
    assert body["id"].startswith("resp_")
    assert before <= body["createdAt"] <= int(time.time())
    assert body["model"] == backend.model(calculator.versions.get().config)
    kinds = [item["type"] for item in body["output"]]
    # The offline model makes one call a step; the fakes were told to make two at once.
    calls = 1 if backend.offline else 2
    assert kinds == ["function_call"] * calls + ["message"]
    assert [c["name"] for c in answer.calls] == ["multiply"] * calls
    assert len({c["id"] for c in answer.calls}) == calls
    assert "15" in answer.text
    assert body["usage"] == usage_sum(model_usages)
    assert body["usage"]["total_tokens"] == (
        body["usage"]["input_tokens"] + body["usage"]["output_tokens"]
    )
    run = completed_run(owner_client, answer, body["usage"])
    assert [m["role"] for m in run["messages"]] == [
        "user",
        "assistant",
        *["tool"] * calls,
        "assistant",
    ]
    assert [c["id"] for c in run["messages"][1]["tool_calls"]] == [c["id"] for c in answer.calls]
    if not backend.offline:
        assert backend.tool_results(1) == {
            answer.calls[0]["id"]: "15",
            answer.calls[1]["id"]: "8",
        }


def test_each_call_gets_its_own_response_and_run(
    backend: Backend, calculator: Agent, owner_client: Any
) -> None:
    turns = (Turn(calls=[Call("multiply", {"a": 3, "b": 5})]), Turn(text=["15"]))
    backend.script(*turns, *turns)

    first = invoke(owner_client, calculator, "invoke", ASK)
    second = invoke(owner_client, calculator, "invoke-stream", ASK)

    assert first.status == second.status == 200
    assert first.body["id"] != second.lines[0]["response"]["id"]
    assert first.run_id != second.run_id
