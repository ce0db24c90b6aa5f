"""Client tools in the tool loop (/v1/openai's `tools`, agents.runtime.tool_agent): a
scripted provider, no database, no HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.llm.base import Message, ToolSpec
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed, ToolCall, ToolResult
from agents.runtime.spec import AgentSpec, RunInput, ToolChoice
from tests.support.scripted import ScriptedProvider, answer, call, done, function, tool_agent

WEATHER = ToolSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def execute(provider: ScriptedProvider, **given: Any) -> list[Event]:
    config = tool_agent(function("multiply"), function("current_time"))
    spec = AgentSpec("agent", "tool", config, provider, "scripted")
    run_input = RunInput((Message("user", "Go"),), client_tools=(WEATHER,), **given)

    async def collect() -> list[Event]:
        return [e async for e in run(spec, run_input)]

    return asyncio.run(collect())


def test_a_client_call_ends_the_turn_and_the_agents_calls_of_that_step_do_not_run() -> None:
    provider = ScriptedProvider(
        [
            call("multiply", '{"a": 3, "b": 5}', "c1"),
            call("get_weather", '{"city": "Paris"}', "c2"),
            done("tool_use"),
        ]
    )

    events = execute(provider)

    assert [t.name for t in provider.requests[0].tools] == [
        "multiply",
        "current_time",
        "get_weather",
    ]
    assert not [e for e in events if isinstance(e, ToolResult)]  # multiply never ran
    [waiting] = [e for e in events if isinstance(e, ToolCall)]
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert last.client_calls == (waiting,)
    assert (waiting.call_id, waiting.name) == ("c2", "get_weather")
    assert len(provider.requests) == 1


def test_the_agents_own_tools_run_before_a_later_step_calls_the_clients() -> None:
    provider = ScriptedProvider(
        [call("multiply", '{"a": 3, "b": 5}', "c1"), done("tool_use")],
        [call("get_weather", '{"city": "Paris"}', "c2"), done("tool_use")],
    )

    events = execute(provider)

    assert [(e.name, e.content) for e in events if isinstance(e, ToolResult)] == [
        ("multiply", "15")
    ]
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert [c.name for c in last.client_calls] == ["get_weather"]


def test_tool_choice_binds_the_first_model_call_or_every_one() -> None:
    provider = ScriptedProvider(
        [call("get_weather", '{"city": "Paris"}'), done("tool_use")],
    )
    execute(provider, tool_choice=ToolChoice("function", "get_weather"))
    assert provider.requests[0].force_tool == "get_weather"

    provider = ScriptedProvider(
        [call("multiply", '{"a": 3, "b": 5}'), done("tool_use")], answer("15.")
    )
    execute(provider, tool_choice=ToolChoice("required"))
    assert [r.tool_choice for r in provider.requests] == ["required", "auto"]

    # "none": a call the provider made anyway is dropped, and no tool runs.
    provider = ScriptedProvider([call("multiply", '{"a": 3, "b": 5}'), done("tool_use")])
    events = execute(provider, tool_choice=ToolChoice("none"))
    assert [r.tool_choice for r in provider.requests] == ["none"]
    assert not [e for e in events if isinstance(e, ToolCall | ToolResult)]
    assert isinstance(events[-1], ResponseCompleted)


def test_parallel_tool_calls_false_keeps_the_first_call_of_a_step() -> None:
    provider = ScriptedProvider(
        [
            call("multiply", '{"a": 3, "b": 5}', "c1"),
            call("multiply", '{"a": 2, "b": 4}', "c2"),
            done("tool_use"),
        ],
        answer("15."),
    )

    events = execute(provider, parallel_tool_calls=False)

    assert [e.call_id for e in events if isinstance(e, ToolResult)] == ["c1"]
    assert not provider.requests[0].parallel_tool_calls
    # The model's next call sees only the call that ran, answered.
    assert [c.call_id for c in provider.requests[1].messages[-2].tool_calls] == ["c1"]


def test_a_client_tool_named_like_an_agents_tool_or_an_unknown_choice_fails_the_run() -> None:
    config = tool_agent(function("multiply"))
    clash = ToolSpec("multiply", "", {"type": "object"})
    for run_input in (
        RunInput((Message("user", "Go"),), client_tools=(clash,)),
        RunInput((Message("user", "Go"),), tool_choice=ToolChoice("function", "nope")),
    ):
        provider = ScriptedProvider()
        spec = AgentSpec("agent", "tool", config, provider, "scripted")

        async def collect(given: RunInput = run_input, at: AgentSpec = spec) -> list[Event]:
            return [e async for e in run(at, given)]

        last = asyncio.run(collect())[-1]
        assert isinstance(last, ResponseFailed)
        assert last.code == "invalid_request"
        assert provider.requests == []  # refused before any model call
