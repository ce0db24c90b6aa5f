"""`/v1/openai` speaks OpenAI's semantics (docs/api.md#openai): the encoder's stream, read back
by the OpenAI SDK's own accumulator, is the message the whole answer carries; the agent's
tool activity travels only in `agentbuilder` objects; the client's tools, `tool_choice`
and `parallel_tool_calls` against a live server, on the offline model and on the fake
Bedrock and OpenAI servers; and the seed's route keeps its layout."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai import OpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from agents.examples import CALCULATOR
from agents.llm.base import ModelRequest, Usage
from agents.llm.openai import _wire_body
from agents.models import Agent, Run
from agents.protocols.openai.encoder import MessageEncoder, OpenAICompletion, completion_body
from agents.runtime.events import (
    Event,
    Intervention,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from tests.fakes.server import Call, Turn
from tests.live import django_port, owner_token  # noqa: F401 (the fixtures port, token)
from tests.support.backends import Backend, bedrock_server, fake_backend, openai_server  # noqa: F401
from tests.support.chat import finished_run, get_messages

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
CREATED = ResponseCreated("resp_0123abcd", "some-model", 1760632921)
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
WEATHER: Any = [{"role": "user", "content": 'What is the weather in "Paris"?'}]
MULTIPLY: Any = [{"role": "user", "content": "What is 12 times 11?"}]
BLOCKED = Intervention("HAIP-Profanity", "output", "Sorry, I cannot say that.")


# ---------------------------------------------------------------- the encoder


def stream_and_body(events: list[Event], **options: Any) -> tuple[list[dict[str, Any]], Any]:
    """(the chunks as JSON, the SDK's completion accumulated from them) of `events`."""
    encoder = MessageEncoder(include_usage=True, **options)
    frames = [frame for event in [CREATED, *events] for frame in encoder.encode(event)]
    assert frames[-1] == b"data: [DONE]\n\n"
    chunks = [json.loads(f.decode().removeprefix("data: ")) for f in frames[:-1]]
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    return chunks, state.get_final_completion()


SEQUENCES: dict[str, tuple[list[Event], dict[str, Any]]] = {
    "text": (
        [TextDelta("Hello "), TextDelta("there."), ResponseCompleted(Usage(2, 2), "Hello there.")],
        {},
    ),
    "server tool round": (
        [
            TextDelta("Let me compute."),
            ToolCall("c1", "multiply", '{"a": 12, "b": 11}'),
            ToolResult("c1", "multiply", "132"),
            TextDelta("It is 132."),
            ResponseCompleted(Usage(9, 4), "It is 132."),
        ],
        {},
    ),
    "forced call, no text after": (
        [
            ToolCall("c1", "multiply", "{}"),
            ToolResult("c1", "multiply", "0"),
            ResponseCompleted(Usage(1, 1), "done"),
        ],
        {},
    ),
    "structured answer after a retry": (
        [
            TextDelta("Let me extract that."),
            ToolCall("c1", "structured_output", '{"age": 35}'),
            ToolResult("c1", "structured_output", "does not match", is_error=True),
            ToolCall("c2", "structured_output", '{"name": "Jo"}'),
            ResponseCompleted(Usage(5, 3), structured={"name": "Jo"}, object_answer=True),
        ],
        {"answer_tools": frozenset({"structured_output"})},
    ),
    "guardrail replaced the rest": (
        [
            TextDelta("Well. "),
            TextDelta(BLOCKED.message),
            ResponseCompleted(
                Usage(3, 4),
                BLOCKED.message,
                custom_outputs=BLOCKED.custom_outputs(),
                intervention=BLOCKED,
            ),
        ],
        {},
    ),
    "guardrail on a structured agent": (
        [
            TextDelta(BLOCKED.message),
            ResponseCompleted(Usage(3, 4), BLOCKED.message, intervention=BLOCKED),
        ],
        {"answer_tools": frozenset({"structured_output"})},
    ),
    "client tool calls": (
        [
            ToolCall("c1", "multiply", '{"a": 2, "b": 3}'),
            ToolResult("c1", "multiply", "6"),
            TextDelta("Now the weather."),
            ToolCall("c2", "get_weather", '{"city": "Paris"}'),
            ToolCall("c3", "get_time", "{}"),
            ResponseCompleted(
                Usage(6, 6),
                "Now the weather.",
                client_calls=(
                    ToolCall("c2", "get_weather", '{"city": "Paris"}'),
                    ToolCall("c3", "get_time", "{}"),
                ),
            ),
        ],
        {"client_tools": frozenset({"get_weather", "get_time"})},
    ),
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_the_streamed_message_is_the_whole_answers_message(name: str) -> None:
    events, options = SEQUENCES[name]

    chunks, streamed = stream_and_body(events, **options)
    body = completion_body([CREATED, *events], **options)

    OpenAICompletion.model_validate(body)  # the shape the OpenAPI document gives
    [choice] = streamed.choices
    whole = body["choices"][0]
    assert choice.message.content == (whole["message"]["content"] or "")
    calls = [
        c.model_dump(include={"id": True, "type": True, "function": {"name", "arguments"}})
        for c in choice.message.tool_calls or []
    ]
    assert calls == whole["message"].get("tool_calls", [])
    assert choice.finish_reason == whole["finish_reason"]
    assert streamed.usage is not None
    assert streamed.usage.model_dump(include={"prompt_tokens", "completion_tokens"}) == {
        "prompt_tokens": events[-1].usage.input_tokens,
        "completion_tokens": events[-1].usage.output_tokens,
    }
    # One message: one id for every chunk, one role chunk.
    assert {c["id"] for c in chunks} == {body["id"]}
    assert sum("role" in c["choices"][0]["delta"] for c in chunks if c["choices"]) == 1
    # The server's activity: only in agentbuilder objects, on chunks that add nothing.
    activity = [c["agentbuilder"] for c in chunks if "agentbuilder" in c]
    assert activity == body.get("agentbuilder", {}).get("events", [])
    for chunk in chunks:
        if "agentbuilder" in chunk:
            assert chunk["choices"][0]["delta"] == {}
        for call in chunk["choices"][0]["delta"].get("tool_calls", []) if chunk["choices"] else []:
            assert call["function"]["name"] in options.get("client_tools", ())


def test_what_each_sequence_answers() -> None:
    def message(name: str) -> dict[str, Any]:
        events, options = SEQUENCES[name]
        return completion_body([CREATED, *events], **options)["choices"][0]["message"]

    assert message("server tool round")["content"] == "Let me compute.\n\nIt is 132."
    assert message("forced call, no text after")["content"] == "done"
    assert message("structured answer after a retry")["content"] == '{"name": "Jo"}'
    assert message("guardrail replaced the rest")["content"] == "Well. " + BLOCKED.message
    assert message("guardrail on a structured agent")["content"] == BLOCKED.message
    waiting = message("client tool calls")
    assert waiting["content"] == "Now the weather."
    assert [c["function"]["name"] for c in waiting["tool_calls"]] == ["get_weather", "get_time"]
    events, options = SEQUENCES["server tool round"]
    assert completion_body([CREATED, *events], **options)["agentbuilder"]["events"] == [
        {"event": "tool_call", "name": "multiply", "arguments": '{"a": 12, "b": 11}', "id": "c1"},
        {"event": "tool_result", "name": "multiply", "result": "132", "id": "c1"},
    ]
    # A retried structured answer is server activity; the answering call is not.
    events, options = SEQUENCES["structured answer after a retry"]
    names = [
        e["id"] for e in completion_body([CREATED, *events], **options)["agentbuilder"]["events"]
    ]
    assert names == ["c1", "c1"]


def test_a_failure_mid_stream_is_an_error_event_then_done() -> None:
    encoder = MessageEncoder(client_tools=frozenset({"get_weather"}))
    events = [
        CREATED,
        TextDelta("Hal"),
        ToolCall("c1", "get_weather", "{}"),
        ResponseFailed("provider_error", "Bedrock said no"),
    ]
    frames = [frame for event in events for frame in encoder.encode(event)]

    assert frames[-2:] == [
        b'data: {"error":{"message":"Bedrock said no","type":"server_error",'
        b'"param":null,"code":"provider_error"}}\n\n',
        b"data: [DONE]\n\n",
    ]
    assert not any(b"tool_calls" in frame for frame in frames)  # never a half-made call


def test_the_openai_wire_says_tool_choice_and_parallel_tool_calls() -> None:
    from agents.llm.base import ToolSpec

    tools = (ToolSpec("multiply", "", {"type": "object"}),)
    request = ModelRequest("openai/gpt-4o-mini", "", (), tools)

    assert "tool_choice" not in _wire_body(request)
    assert "parallel_tool_calls" not in _wire_body(request)
    body = _wire_body(
        ModelRequest(
            "openai/gpt-4o-mini", "", (), tools, tool_choice="required", parallel_tool_calls=False
        )
    )
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)
    forced = _wire_body(ModelRequest("m", "", (), tools, force_tool="multiply", tool_choice="none"))
    assert forced["tool_choice"] == {"type": "function", "function": {"name": "multiply"}}


# ---------------------------------------------------------------- the live server


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("calculator", "tool", config=CALCULATOR["config"])


def base(port: int, token: str) -> OpenAI:
    return OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1/openai", api_key=token, max_retries=0, timeout=60
    )


def seed(port: int, token: str) -> OpenAI:
    return OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=token, max_retries=0, timeout=60)


@LIVE
def test_the_seed_route_keeps_call_result_and_answer_as_messages_and_the_base_has_one(
    port: int, token: str, calculator: Agent
) -> None:
    rebuilt = get_messages(
        seed(port, token).chat.completions.create(
            model="calculator", messages=MULTIPLY, stream=True
        )
    )
    assert [m["role"] for m in rebuilt] == ["assistant", "tool", "assistant"]
    assert rebuilt[0]["tool_calls"][0]["function"]["name"] == "multiply"
    assert rebuilt[1]["content"] == "132"

    raw = list(
        base(port, token).chat.completions.create(
            model="calculator", messages=MULTIPLY, stream=True
        )
    )
    one = get_messages(iter(raw))
    assert [m["role"] for m in one] == ["assistant"]
    assert "tool_calls" not in one[0]
    assert one[0]["content"] == rebuilt[2]["content"]
    activity = [
        c.model_extra["agentbuilder"]
        for c in raw
        if c.model_extra and "agentbuilder" in c.model_extra
    ]
    assert [(a["event"], a["name"]) for a in activity] == [
        ("tool_call", "multiply"),
        ("tool_result", "multiply"),
    ]
    assert activity[1]["result"] == "132"
    assert activity[0]["id"] == activity[1]["id"] == rebuilt[1]["tool_call_id"]
    # The seed's routes still refuse a client's tools.
    with pytest.raises(openai.BadRequestError) as refused:
        seed(port, token).chat.completions.create(
            model="calculator",
            messages=MULTIPLY,
            tools=[WEATHER_TOOL],
        )
    assert refused.value.param == "tools"


@LIVE
@pytest.mark.parametrize("stream", [False, True])
def test_a_client_tool_call_ends_the_completion_and_the_history_continues_it(
    port: int, token: str, calculator: Agent, stream: bool
) -> None:
    client = base(port, token)

    def complete(messages: list[Any]) -> tuple[Any, str]:
        if not stream:
            done = client.chat.completions.create(
                model="calculator",
                messages=messages,
                tools=[WEATHER_TOOL],
            )
            return done.choices[0].message, str(done.choices[0].finish_reason)
        with client.chat.completions.stream(
            model="calculator",
            messages=messages,
            tools=[WEATHER_TOOL],
        ) as events:
            final = events.get_final_completion()
        return final.choices[0].message, str(final.choices[0].finish_reason)

    message, finish = complete(WEATHER)
    assert finish == "tool_calls"
    [call] = message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    history = [
        *WEATHER,
        {"role": "assistant", "content": message.content, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    answer, finish = complete(history)

    assert finish == "stop"
    assert answer.tool_calls in (None, [])
    assert "sunny, 21 C" in (answer.content or "")
    first, second = Run.objects.filter(agent=calculator).order_by("started_at")
    first, second = finished_run(str(first.pk)), finished_run(str(second.pk))
    assert (first.status, second.status) == ("completed", "completed")
    assert first.output["tool_calls"][0]["id"] == call.id


@LIVE
def test_tool_choice_none_required_and_named(port: int, token: str, calculator: Agent) -> None:
    client = base(port, token)

    def create(messages: list[Any], choice: Any) -> Any:
        return client.chat.completions.create(
            model="calculator",
            messages=messages,
            tools=[WEATHER_TOOL],
            tool_choice=choice,
        )

    none = create(MULTIPLY, "none")
    assert "132" in (none.choices[0].message.content or "")  # worked out without multiply
    assert "agentbuilder" not in (none.model_extra or {})

    required = create([{"role": "user", "content": "Hello"}], "required")
    events = required.model_extra["agentbuilder"]["events"]
    assert events[0]["event"] == "tool_call"  # the first model call had to call a tool

    named = create(
        [{"role": "user", "content": "Hello"}],
        {"type": "function", "function": {"name": "get_weather"}},
    )
    assert named.choices[0].finish_reason == "tool_calls"
    assert named.choices[0].message.tool_calls[0].function.name == "get_weather"


@LIVE
def test_refusals_name_their_field(
    port: int, token: str, calculator: Agent, make_agent: Any
) -> None:
    make_agent("handbook", "rag")
    client = base(port, token)
    clash = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "name": "multiply"}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model": "calculator", "tools": [WEATHER_TOOL, clash]}, "tools[1].function.name"),
        (
            {
                "model": "calculator",
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            "tool_choice.function.name",
        ),
        ({"model": "calculator", "tool_choice": "sometimes"}, "tool_choice"),
        (
            {"model": "calculator", "tools": [{"type": "function", "function": {"name": "a b"}}]},
            "tools[0].function.name",
        ),
        ({"model": "calculator", "tools": [WEATHER_TOOL, WEATHER_TOOL]}, "tools[1].function.name"),
        ({"model": "handbook", "tools": [WEATHER_TOOL]}, "tools"),
    ]
    for extra, param in cases:
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(messages=MULTIPLY, **extra)
        assert refused.value.param == param, extra
    # Whatever the refusal, no run was left in progress.
    assert not Run.objects.filter(status="in_progress").exists()


# ---------------------------------------------------------------- fake providers


@LIVE
def test_a_step_that_mixes_client_and_server_calls_returns_the_clients_and_runs_none(
    port: int,
    token: str,
    fake_backend: Backend,  # noqa: F811 (the fixture)
    make_agent: Any,
) -> None:
    make_agent("calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))
    fake_backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}), Call("get_weather", {"city": "Paris"})])
    )

    done = base(port, token).chat.completions.create(
        model="calculator",
        messages=WEATHER,
        tools=[WEATHER_TOOL],
    )

    assert done.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in done.choices[0].message.tool_calls or []] == ["get_weather"]
    assert "agentbuilder" not in (done.model_extra or {})  # multiply did not run
    assert len(fake_backend.fake.bodies) == 1


@LIVE
def test_parallel_tool_calls_false_keeps_one_call_and_tells_the_provider(
    port: int,
    token: str,
    fake_backend: Backend,  # noqa: F811 (the fixture)
    make_agent: Any,
) -> None:
    make_agent("calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))
    fake_backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}), Call("multiply", {"a": 2, "b": 4})]),
        Turn(text=["15."]),
    )

    done = base(port, token).chat.completions.create(
        model="calculator", messages=MULTIPLY, parallel_tool_calls=False, tool_choice="required"
    )

    events = done.model_extra["agentbuilder"]["events"]
    assert [(e["event"], e.get("arguments")) for e in events] == [
        ("tool_call", '{"a": 3, "b": 5}'),
        ("tool_result", None),
    ]
    first = fake_backend.body(0)
    if fake_backend.name == "openai":
        assert (first["parallel_tool_calls"], first["tool_choice"]) == (False, "required")
    else:
        assert first["toolConfig"]["toolChoice"] == {"any": {}}
