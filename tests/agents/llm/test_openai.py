"""The OpenAI provider through the real `openai` SDK, over HTTP, against the fake server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from django.conf import settings

from agents.llm.base import (
    Finished,
    Message,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
    Usage,
)
from agents.llm.openai import OpenAIProvider
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Fail, Turn

MODEL = "openai/gpt-4o-mini"
WEATHER = ToolSpec(
    "get_weather",
    "Current weather of a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        for name, value in (("OPENAI_BASE_URL", fake.base_url), ("OPENAI_API_KEY", "sk-test")):
            patch.setenv(name, value)
            patch.setattr(settings, name, value, raising=False)
        yield fake


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.reset()
    return server


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    defaults: dict[str, Any] = {"max_retries": 0, "timeout": 5.0}
    return ModelRequest(MODEL, "", (Message("user", text),), **(defaults | kwargs))


def collect(request: ModelRequest) -> list[ProviderEvent]:
    async def run() -> list[ProviderEvent]:
        return [event async for event in OpenAIProvider().stream(request)]

    return asyncio.run(run())


def test_text_streams_as_several_chunks_in_order(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["The ", "sky ", "is ", "blue."], pause=0.01))

    events = collect(ask())

    assert [e.text for e in events if isinstance(e, TextChunk)] == ["The ", "sky ", "is ", "blue."]
    assert events[-1] == Finished(Usage(11, 7), "end_turn")


def test_calls_in_turn_reuse_one_connection(fake: FakeOpenAI) -> None:
    # The body is read to its end after [DONE], so httpx keeps the connection for the next
    # call instead of closing it (a TCP and TLS handshake per call on a real server).
    fake.script(*(Turn(text=[f"Answer {n}."]) for n in range(3)))

    async def three() -> list[list[ProviderEvent]]:
        return [[event async for event in OpenAIProvider().stream(ask())] for _ in range(3)]

    answers = asyncio.run(three())

    assert [[e.text for e in a if isinstance(e, TextChunk)] for a in answers] == [
        [f"Answer {n}."] for n in range(3)
    ]
    assert len({recorded.client for recorded in fake.requests}) == 1


def test_tool_arguments_in_fragments_are_joined_into_one_call(fake: FakeOpenAI) -> None:
    arguments = {"city": "Lisbon", "units": "metric"}
    fake.script(Turn(calls=[Call("get_weather", arguments, id="call_1", pieces=5)]))

    events = collect(ask("Weather in Lisbon?", tools=(WEATHER,)))

    calls = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert len(calls) == 1
    assert (calls[0].call_id, calls[0].name) == ("call_1", "get_weather")
    assert json.loads(calls[0].arguments) == arguments
    assert events[-1] == Finished(Usage(11, 7), "tool_use")


def test_two_parallel_tool_calls_in_one_turn(fake: FakeOpenAI) -> None:
    fake.script(
        Turn(calls=[Call("get_weather", {"city": "Oslo"}), Call("get_weather", {"city": "Rome"})])
    )

    events = collect(ask("Oslo and Rome?", tools=(WEATHER,)))

    calls = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Oslo"}, {"city": "Rome"}]
    assert len({c.call_id for c in calls}) == 2


def test_empty_tool_arguments_become_an_empty_object(fake: FakeOpenAI) -> None:
    fake.script(Turn(calls=[Call("now", "")]))

    events = collect(ask("Time?", tools=(ToolSpec("now", "The time.", {"type": "object"}),)))

    assert [e.call.arguments for e in events if isinstance(e, ToolCallChunk)] == ["{}"]


def test_structured_output_forces_the_tool(fake: FakeOpenAI) -> None:
    answer = ToolSpec("answer", "The answer.", {"type": "object"})
    fake.script(Turn(calls=[Call("answer", {"n": 1})]))

    collect(ask("Fill it", tools=(WEATHER, answer), force_tool="answer"))

    body = fake.bodies[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": WEATHER.parameters,
        },
    }


def test_request_maps_history_to_chat_messages(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["Oslo is cold."]))
    calls = (
        ToolCallPart("c1", "get_weather", '{"city": "Oslo"}'),
        ToolCallPart("c2", "get_weather", '{"city": "Rome"}'),
    )
    request = ModelRequest(
        MODEL,
        "Be brief.",
        (
            Message("user", "Oslo and Rome?"),
            Message("assistant", "", tool_calls=calls),
            Message("tool", "-3°C", tool_call_id="c1", name="get_weather"),
            Message("tool", "no such city", tool_call_id="c2", is_error=True),
        ),
        tools=(WEATHER,),
        max_tokens=300,
        temperature=0.5,
        max_retries=0,
    )

    collect(request)

    body = fake.bodies[0]
    assert body["model"] == "gpt-4o-mini"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["temperature"]) == (300, 0.5)
    assert "tool_choice" not in body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Oslo and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "-3°C"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: no such city"},
    ]


def test_request_without_system_or_tools_omits_them(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["ok"]))

    collect(ask())

    body = fake.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "tools" not in body
    assert "tool_choice" not in body


def test_rate_limited_call_is_retried_then_streams(fake: FakeOpenAI) -> None:
    fake.script(Fail(429, "Rate limit reached", retry_after_ms=10), Turn(text=["fine"]))

    events = collect(ask(max_retries=2))

    assert len(fake.requests) == 2
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["fine"]


def test_server_error_every_time_gives_up_after_max_retries(fake: FakeOpenAI) -> None:
    fake.fallback = Fail(500, "The server had an error", retry_after_ms=10)

    with pytest.raises(ProviderError, match=r"HTTP 500.*The server had an error") as caught:
        collect(ask(max_retries=2))

    assert len(fake.requests) == 3
    assert caught.value.code == "provider_error"
    assert not caught.value.timeout


def test_client_error_is_not_retried(fake: FakeOpenAI) -> None:
    fake.fallback = Fail(400, "Invalid schema for function 'get_weather'")

    with pytest.raises(ProviderError, match=r"HTTP 400.*Invalid schema"):
        collect(ask(max_retries=3))

    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("fail", "another_model_may_answer"),
    [
        (Fail(429, "Rate limit reached", retry_after_ms=10), True),
        (Fail(500, "The server had an error", retry_after_ms=10), True),
        (Fail(503, "The engine is overloaded", retry_after_ms=10), True),
        (Fail(404, "The model does not exist"), True),
        (Fail(400, "Invalid schema for function 'get_weather'"), False),
        (Fail(422, "Unprocessable request"), False),
    ],
    ids=["rate-limited", "500", "overloaded", "unknown-model", "bad-request", "unprocessable"],
)
def test_an_error_says_whether_another_model_may_answer(
    fake: FakeOpenAI, fail: Fail, another_model_may_answer: bool
) -> None:
    fake.fallback = fail

    with pytest.raises(ProviderError) as caught:
        collect(ask())

    assert caught.value.fallback_ok is another_model_may_answer


def test_a_timeout_leaves_another_model_to_try(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["late"], delay=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout
    assert caught.value.fallback_ok


def test_a_model_told_to_fail_fails_every_try_and_leaves_the_script_to_others(
    fake: FakeOpenAI,
) -> None:
    fake.fail_model("gpt-4o-mini", Fail(429, "Rate limit reached", retry_after_ms=10))
    fake.script(Turn(text=["from the other model"]))

    with pytest.raises(ProviderError, match="HTTP 429"):
        collect(ask(max_retries=2))
    other = collect(dataclasses.replace(ask(), model_id="openai/gpt-4o"))

    assert [body["model"] for body in fake.bodies] == ["gpt-4o-mini"] * 3 + ["gpt-4o"]
    assert [e.text for e in other if isinstance(e, TextChunk)] == ["from the other model"]


def test_error_mid_stream_is_a_provider_error(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], error_after=2))

    with pytest.raises(ProviderError, match="The model stream failed") as caught:
        collect(ask(max_retries=2))

    assert len(fake.requests) == 1
    assert not caught.value.timeout


def test_connection_dropped_mid_stream_is_a_provider_error(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], cut_after=2))

    with pytest.raises(ProviderError) as caught:
        collect(ask())

    assert not caught.value.timeout


def test_slow_answer_is_a_timeout(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["late"], delay=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout
    assert caught.value.code == "provider_timeout"


def test_stalled_stream_is_a_timeout(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["one ", "two"], hang=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout


def test_usage_is_normalised(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["ok"], usage=(120, 30)))

    finished = collect(ask())[-1]

    assert isinstance(finished, Finished)
    assert finished.usage.as_dict() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
    }


def test_finish_reasons_are_mapped(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["cut sh"], stop="length"), Turn(text=["x"], stop="content_filter"))

    assert collect(ask())[-1] == Finished(Usage(11, 7), "max_tokens")
    assert collect(ask())[-1] == Finished(Usage(11, 7), "other")


def test_closing_the_stream_early_releases_the_connection(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], hang=5.0))

    async def read_one() -> tuple[ProviderEvent, bool]:
        stream = OpenAIProvider().stream(ask())
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        # Seen from inside the loop: closing the loop would close the response anyway.
        # Returns as soon as the stream is dropped; the margin is a busy machine's.
        return first, await asyncio.to_thread(fake.disconnected.wait, 15.0)

    first, disconnected = asyncio.run(read_one())

    assert first == TextChunk("one ")
    assert disconnected


def test_missing_api_key_is_a_provider_error(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr(settings, "OPENAI_API_KEY", None)

    with pytest.raises(ProviderError, match="not configured"):
        collect(ask())

    assert fake.requests == []


def test_fake_answers_without_streaming(fake: FakeOpenAI) -> None:
    fake.script(Turn(text=["Hello"], calls=[Call("get_weather", {"city": "Oslo"}, id="c9")]))
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)

    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
    )

    message = answer.choices[0].message
    assert message.content == "Hello"
    assert message.tool_calls is not None
    assert message.tool_calls[0].id == "c9"
    assert answer.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [True, False])
def test_a_call_asks_for_a_stream_only_when_its_deltas_are_read(
    fake: FakeOpenAI, stream: bool
) -> None:
    calls = [Call("get_weather", {"city": "Oslo"}, id="c1"), Call("get_weather", {"city": "Rome"})]
    fake.script(Turn(text=["Let me ", "look."], calls=calls, usage=(120, 30), cached=100))

    events = collect(ask("Oslo and Rome?", tools=(WEATHER,), stream=stream))

    (body,) = [r.body for r in fake.requests]
    assert body["stream"] is stream
    assert ("stream_options" in body) is stream  # usage comes in a whole answer anyway
    texts = [e.text for e in events if isinstance(e, TextChunk)]
    assert texts == (["Let me ", "look."] if stream else ["Let me look."])
    called = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in called] == [
        ("c1", "get_weather", {"city": "Oslo"}),
        (called[1].call_id, "get_weather", {"city": "Rome"}),
    ]
    assert events[-1] == Finished(Usage(120, 30, cached_input_tokens=100), "tool_use")
