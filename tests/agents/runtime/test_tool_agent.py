"""The runtime on its own: a scripted provider, no database, no HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agents.configs import config_parse
from agents.llm.base import (
    Message,
    TextChunk,
)
from agents.runtime.engine import run
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agents.runtime.spec import AgentSpec, RunInput
from agents.runtime.task_agent import TaskInputError, prepare_inputs
from agents.runtime.tools import functions
from tests.support.scripted import ScriptedProvider, answer, call, done, function, tool_agent


def execute(config: Any, provider: ScriptedProvider, text: str = "Go") -> list[Event]:
    spec = AgentSpec("agent", "tool", config, provider, "scripted")

    async def collect() -> list[Event]:
        return [e async for e in run(spec, RunInput((Message("user", text),)))]

    return asyncio.run(collect())


def results(events: list[Event]) -> list[tuple[str, bool]]:
    return [(e.content, e.is_error) for e in events if isinstance(e, ToolResult)]


def test_a_tool_result_goes_back_to_the_model_and_the_loop_ends_on_text():
    provider = ScriptedProvider(
        [call("multiply", '{"a": 3, "b": 5}'), done("tool_use")], answer("It is 15.")
    )
    events = execute(tool_agent(function("multiply")), provider)
    assert results(events) == [("15", False)]
    assert provider.requests[1].messages[-1].text == "15"
    assert provider.requests[1].messages[-1].tool_call_id == "c1"
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert last.text == "It is 15."
    assert last.usage.total_tokens == 24  # two model calls of 10 + 2


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("divide", '{"a": 1, "b": 0}', "division by zero"),
        ("nope", "{}", "unknown tool 'nope'"),
        ("multiply", '{"a": 3,', "not valid JSON"),
        ("multiply", '{"a": "three", "b": 5}', "do not match the schema"),
        ("multiply", "[1, 2]", "must be a JSON object"),
    ],
    ids=["tool-raises", "unknown-tool", "bad-json", "schema-mismatch", "not-an-object"],
)
def test_a_failing_call_becomes_an_error_result_and_the_loop_goes_on(name, arguments, says):
    provider = ScriptedProvider([call(name, arguments), done("tool_use")], answer())
    events = execute(tool_agent(function("multiply"), function("divide")), provider)
    [(content, is_error)] = results(events)
    assert is_error
    assert says in content
    assert isinstance(events[-1], ResponseCompleted)
    assert provider.requests[1].messages[-1].is_error


def test_empty_arguments_are_an_empty_object():
    provider = ScriptedProvider([call("current_time", ""), done("tool_use")], answer())
    events = execute(tool_agent(function("current_time")), provider)
    [tool_call] = [e for e in events if isinstance(e, ToolCall)]
    assert tool_call.arguments == "{}"
    [(content, is_error)] = results(events)
    assert not is_error
    assert content[:2] == "20"  # an ISO date of this century


def test_calls_of_one_step_run_concurrently(monkeypatch):
    started: list[str] = []
    both = asyncio.Event()

    async def rendezvous(tag: str) -> str:
        """Waits until the other call has started too: sequential calls would never meet."""
        started.append(tag)
        if len(started) == 2:
            both.set()
        # Concurrent calls meet at once; sequential ones never do and fail here. The wait
        # is generous for a busy machine, where the second call may start late.
        await asyncio.wait_for(both.wait(), timeout=30)
        return tag

    monkeypatch.setitem(
        functions.REGISTRY,
        "rendezvous",
        functions.FunctionSpec("rendezvous", "meet", {"type": "object"}, rendezvous),
    )
    provider = ScriptedProvider(
        [call("meet", '{"tag": "a"}', "c1"), call("meet", '{"tag": "b"}', "c2"), done("tool_use")],
        answer(),
    )
    events = execute(tool_agent(function("meet", "rendezvous")), provider)
    assert results(events) == [("a", False), ("b", False)]
    # Both results go back in call order, in one model request.
    assert [m.tool_call_id for m in provider.requests[1].messages[-2:]] == ["c1", "c2"]


def test_hitting_max_iterations_fails_the_run():
    provider = ScriptedProvider(
        *[[call("multiply", '{"a": 1, "b": 1}', f"c{i}"), done("tool_use")] for i in range(3)]
    )
    events = execute(tool_agent(function("multiply"), max_iterations=2), provider)
    last = events[-1]
    assert isinstance(last, ResponseFailed)
    assert last.code == "max_iterations"
    assert len(provider.requests) == 2


STRUCTURED = {
    "toolType": "structured_output",
    "name": "structured_output",
    "description": "The person",
    "outputSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name"],
    },
}


def test_structured_output_is_forced_validated_and_retried():
    provider = ScriptedProvider(
        [call("structured_output", '{"age": "old"}'), done("tool_use")],
        [call("structured_output", '{"name": "Ada", "age": 36}', "c2"), done("tool_use")],
    )
    events = execute(tool_agent(STRUCTURED), provider)
    assert all(r.force_tool == "structured_output" for r in provider.requests)
    feedback = provider.requests[1].messages[-1]
    assert feedback.is_error
    assert "'name' is a required property" in feedback.text
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert last.structured == {"name": "Ada", "age": 36}
    assert last.object_answer


def test_structured_output_fails_after_max_retries():
    bad = [call("structured_output", "{}"), done("tool_use")]
    provider = ScriptedProvider(*[list(bad) for _ in range(3)])
    events = execute(tool_agent(STRUCTURED, retries=1), provider)
    last = events[-1]
    assert isinstance(last, ResponseFailed)
    assert last.code == "structured_output_invalid"
    assert len(provider.requests) == 2  # the first try and one retry


def test_text_deltas_stream_in_order():
    provider = ScriptedProvider([TextChunk("Hel"), TextChunk(""), TextChunk("lo"), done()])
    events = execute(tool_agent(function("multiply")), provider)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]


TASK = {
    "llmModelId": "local.demo-v1",
    "systemPrompt": "Plan {{ days }} days for {{ who }} with {{ prefs }}.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "who": {"type": "string"},
            "days": {"type": "integer", "default": 3},
            "prefs": {"type": "object"},
        },
        "required": ["who", "prefs"],
    },
}


def test_task_inputs_get_defaults_and_non_strings_render_as_json():
    inputs, prompt = prepare_inputs(
        config_parse("task", TASK), {"who": "Ann", "prefs": {"sea": True}}
    )
    assert inputs["days"] == 3
    assert prompt == 'Plan 3 days for Ann with {"sea": true}.'


def test_task_inputs_list_every_violation_with_its_path():
    with pytest.raises(TaskInputError) as caught:
        prepare_inputs(config_parse("task", TASK), {"days": "many", "prefs": []})
    # who missing (reported at itself), days not an integer, prefs not an object
    paths = sorted(path for path, _ in caught.value.problems)
    assert paths == [("days",), ("prefs",), ("who",)]


def test_structured_arguments_text_is_kept_verbatim():
    arguments = json.dumps({"name": "Ada", "age": 36})
    provider = ScriptedProvider([call("structured_output", arguments), done("tool_use")])
    events = execute(tool_agent(STRUCTURED), provider)
    [tool_call] = [e for e in events if isinstance(e, ToolCall)]
    assert tool_call.arguments == arguments
