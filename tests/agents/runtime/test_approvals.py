"""Tool approvals in the runtime (agents/runtime/approvals.py, the tool loop): which calls
wait, that a waiting call runs nothing, and that a resumed turn runs what was approved and
tells the model what was not, on a scripted provider with no database and no HTTP. The
surfaces are tested against live servers in tests/agents/runs/test_approvals.py."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from agents.configs import ArgumentsMatch, config_parse
from agents.llm.base import Message
from agents.runtime.approvals import Decision, Resume, needs_approval
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseCompleted, ToolResult
from agents.runtime.spec import AgentSpec, Meter, Retriever, RunInput
from retrieval.nodes import Node
from tests.support.scripted import ScriptedProvider, answer, call, done

OVER_100 = ArgumentsMatch(
    arguments_match={"type": "object", "properties": {"amount": {"exclusiveMinimum": 100}}}
)


@pytest.mark.parametrize(
    ("policy", "arguments", "waits"),
    [
        (None, '{"amount": 500}', False),
        ("never", '{"amount": 500}', False),
        ("always", '{"amount": 5}', True),
        (OVER_100, '{"amount": 500}', True),
        (OVER_100, '{"amount": 5}', False),
        (OVER_100, '{"amount": ', True),  # arguments that do not parse: fail closed
        (OVER_100, "[1, 2]", True),  # not an object
        (OVER_100, "", True),  # no arguments read as `{}`, which this schema matches
    ],
)
def test_which_calls_wait(policy: Any, arguments: str, waits: bool) -> None:
    assert needs_approval(policy, arguments) is waits


def search_agent(require: Any) -> Any:
    return config_parse(
        "tool",
        {
            "llmModelId": "local.demo-v1",
            "tools": [
                {
                    "toolType": "rag",
                    "name": "search",
                    "description": "Searches",
                    "requireApproval": require,
                }
            ],
        },
    )


def collect(spec: AgentSpec, run_input: RunInput, meter: Meter | None = None) -> list[Event]:
    async def go() -> list[Event]:
        return [e async for e in run(spec, run_input, meter=meter or Meter())]

    return asyncio.run(go())


def test_a_gated_search_waits_and_searches_nothing_then_runs_once_approved() -> None:
    searched: list[str] = []

    async def search(query: str) -> list[Node]:
        searched.append(query)
        return []

    provider = ScriptedProvider(
        [call("search", '{"query": "refunds"}'), done("tool_use")], answer("Nothing found.")
    )
    spec = AgentSpec("agent", "tool", search_agent("always"), provider, "scripted")
    run_input = RunInput(
        (Message("user", "Refunds?"),), retrievers={"search": Retriever(search)}, can_pause=True
    )
    first = collect(spec, run_input)
    paused = first[-1]
    assert isinstance(paused, ResponseCompleted)
    assert [r.name for r in paused.approval_requests] == ["search"]
    assert paused.paused is not None
    assert searched == []
    assert len(provider.requests) == 1

    [asked] = paused.approval_requests
    resume = Resume(paused.paused, (Decision(asked.approval_request_id, True, "", "ana", "now"),))
    meter = Meter()
    rest = collect(spec, replace(run_input, messages=(), resume=resume), meter)
    assert searched == ["refunds"]  # once, now
    assert isinstance(rest[-1], ResponseCompleted)
    assert rest[-1].text == "Nothing found."
    assert len(provider.requests) == 2  # the first model call was not made again
    kinds = [s["type"] for s in meter.trace.steps]
    assert kinds[:3] == ["approval_decision", "tool_call", "retrieval"]


def test_a_rejection_reaches_the_model_and_runs_nothing() -> None:
    searched: list[str] = []

    async def search(query: str) -> list[Node]:
        searched.append(query)
        return []

    provider = ScriptedProvider(
        [call("search", '{"query": "salaries"}'), done("tool_use")], answer("I may not.")
    )
    spec = AgentSpec("agent", "tool", search_agent("always"), provider, "scripted")
    run_input = RunInput(
        (Message("user", "Salaries?"),), retrievers={"search": Retriever(search)}, can_pause=True
    )
    paused = collect(spec, run_input)[-1]
    assert isinstance(paused, ResponseCompleted)
    assert paused.paused is not None
    [asked] = paused.approval_requests
    no = Decision(asked.approval_request_id, False, "Private data.", "ana", "now")
    events = collect(spec, replace(run_input, resume=Resume(paused.paused, (no,))))
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error
    assert "rejected by ana" in result.content
    assert "Private data." in result.content
    assert provider.requests[1].messages[-1].text == result.content
    assert searched == []


def test_where_a_run_cannot_wait_a_gated_call_is_refused_to_the_model() -> None:
    searched: list[str] = []

    async def search(query: str) -> list[Node]:
        searched.append(query)
        return []

    provider = ScriptedProvider(
        [call("search", '{"query": "refunds"}'), done("tool_use")], answer("I could not look.")
    )
    spec = AgentSpec("agent", "tool", search_agent("always"), provider, "scripted")
    events = collect(
        spec, RunInput((Message("user", "Refunds?"),), retrievers={"search": Retriever(search)})
    )
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error
    assert "needs a person's approval" in result.content
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert not last.approval_requests
    assert last.text == "I could not look."
    assert searched == []
