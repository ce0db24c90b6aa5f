"""The Bedrock provider through the real boto3, over HTTP, against the fake Bedrock."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.eventstream import EventStreamBuffer

from agentbuilder import aws
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
from agents.llm.bedrock import BedrockProvider
from tests.fakes.bedrock import FakeBedrock, bedrock_environment, encode_event, encode_exception
from tests.fakes.server import Call, Fail, Turn

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
WEATHER = ToolSpec(
    "get_weather",
    "Current weather of a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    # One server per module, so boto3 clients (costly to build) serve every test.
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeBedrock) -> FakeBedrock:
    server.reset()
    return server


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    defaults: dict[str, Any] = {"max_retries": 0, "timeout": 5.0}
    return ModelRequest(MODEL, "", (Message("user", text),), **(defaults | kwargs))


def collect(request: ModelRequest) -> list[ProviderEvent]:
    async def run() -> list[ProviderEvent]:
        return [event async for event in BedrockProvider().stream(request)]

    return asyncio.run(run())


def test_encoder_frames_decode_with_botocores_own_parser() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(encode_event("contentBlockDelta", {"delta": {"text": "hé"}}))
    buffer.add_data(encode_exception("internalServerException", "boom"))

    event, exception = list(buffer)

    assert event.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(event.payload) == {"delta": {"text": "hé"}}
    assert exception.headers[":exception-type"] == "internalServerException"
    assert exception.to_response_dict()["status_code"] == 400


def test_text_streams_as_several_chunks_in_order(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["The ", "sky ", "is ", "blue."], pause=0.01))

    events = collect(ask())

    assert [e.text for e in events if isinstance(e, TextChunk)] == ["The ", "sky ", "is ", "blue."]
    assert events[-1] == Finished(Usage(11, 7), "end_turn")
    assert fake.model_ids() == [MODEL]


def test_tool_input_in_fragments_is_joined_into_one_call(fake: FakeBedrock) -> None:
    arguments = {"city": "Lisbon", "units": "metric"}
    fake.script(Turn(calls=[Call("get_weather", arguments, id="tooluse_1", pieces=5)]))

    events = collect(ask("Weather in Lisbon?", tools=(WEATHER,)))

    calls = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert len(calls) == 1
    assert (calls[0].call_id, calls[0].name) == ("tooluse_1", "get_weather")
    assert json.loads(calls[0].arguments) == arguments
    assert events[-1] == Finished(Usage(11, 7), "tool_use")


def test_two_parallel_tool_calls_in_one_turn(fake: FakeBedrock) -> None:
    fake.script(
        Turn(
            text=["Checking both."],
            calls=[Call("get_weather", {"city": "Oslo"}), Call("get_weather", {"city": "Rome"})],
        )
    )

    events = collect(ask("Oslo and Rome?", tools=(WEATHER,)))

    calls = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Oslo"}, {"city": "Rome"}]
    assert len({c.call_id for c in calls}) == 2


def test_empty_tool_input_becomes_an_empty_object(fake: FakeBedrock) -> None:
    fake.script(Turn(calls=[Call("now", "")]))

    events = collect(ask("Time?", tools=(ToolSpec("now", "The time.", {"type": "object"}),)))

    assert [e.call.arguments for e in events if isinstance(e, ToolCallChunk)] == ["{}"]


def test_structured_output_forces_the_tool(fake: FakeBedrock) -> None:
    answer = ToolSpec("answer", "The answer.", {"type": "object"})
    fake.script(Turn(calls=[Call("answer", {"n": 1})]))

    collect(ask("Fill it", tools=(WEATHER, answer), force_tool="answer"))

    tool_config = fake.bodies[0]["toolConfig"]
    assert tool_config["toolChoice"] == {"tool": {"name": "answer"}}
    assert tool_config["tools"][0] == {
        "toolSpec": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "inputSchema": {"json": WEATHER.parameters},
        }
    }


def test_request_alternates_roles_and_merges_tool_results(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["Oslo is cold, Rome is warm."]))
    calls = (
        ToolCallPart("t1", "get_weather", '{"city": "Oslo"}'),
        ToolCallPart("t2", "get_weather", '{"city": "Rome"}'),
    )
    request = ModelRequest(
        MODEL,
        "Be brief.",
        (
            Message("user", "Oslo and Rome?"),
            Message("assistant", "Checking.", tool_calls=calls),
            Message("tool", "-3°C", tool_call_id="t1", name="get_weather"),
            Message("tool", "no such city", tool_call_id="t2", is_error=True),
        ),
        tools=(WEATHER,),
        max_tokens=300,
        temperature=0.5,
        max_retries=0,
    )

    collect(request)

    body = fake.bodies[0]
    assert body["system"] == [{"text": "Be brief."}]
    assert body["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.5}
    assert "toolChoice" not in body["toolConfig"]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Oslo and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Oslo"}}},
                {"toolUse": {"toolUseId": "t2", "name": "get_weather", "input": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "-3°C"}]}},
                {
                    "toolResult": {
                        "toolUseId": "t2",
                        "content": [{"text": "no such city"}],
                        "status": "error",
                    }
                },
            ],
        },
    ]


def test_request_without_system_or_tools_omits_them(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["ok"]))

    collect(ask())

    assert "system" not in fake.bodies[0]
    assert "toolConfig" not in fake.bodies[0]


def test_throttled_call_is_retried_then_streams(fake: FakeBedrock) -> None:
    fake.script(Fail(429, "Too many requests"), Turn(text=["fine"]))

    events = collect(ask(max_retries=2))

    assert len(fake.requests) == 2
    assert [e.text for e in events if isinstance(e, TextChunk)] == ["fine"]


def test_server_error_every_time_gives_up_after_max_retries(fake: FakeBedrock) -> None:
    fake.fallback = Fail(500, "Internal failure")

    with pytest.raises(ProviderError) as caught:
        collect(ask(max_retries=2))

    assert len(fake.requests) == 3
    assert "InternalServerException" in str(caught.value)
    assert "3 attempts" in str(caught.value)
    assert caught.value.code == "provider_error"
    assert not caught.value.timeout


def test_client_error_is_not_retried(fake: FakeBedrock) -> None:
    fake.fallback = Fail(400, "Malformed input request")

    with pytest.raises(ProviderError, match="ValidationException: Malformed input request"):
        collect(ask(max_retries=3))

    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("fail", "another_model_may_answer"),
    [
        (Fail(429, "Too many requests"), True),
        (Fail(429, "Model is loading", code="ModelNotReadyException"), True),
        (Fail(500, "Internal failure"), True),
        (Fail(503, "Service unavailable"), True),
        (Fail(403, "No access to this model"), True),
        (Fail(400, "Malformed input request"), False),
    ],
    ids=["throttled", "not-ready", "500", "unavailable", "no-access", "validation"],
)
def test_an_error_says_whether_another_model_may_answer(
    fake: FakeBedrock, fail: Fail, another_model_may_answer: bool
) -> None:
    fake.fallback = fail

    with pytest.raises(ProviderError) as caught:
        collect(ask())

    assert caught.value.fallback_ok is another_model_may_answer


def test_a_timeout_leaves_another_model_to_try(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["late"], delay=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout
    assert caught.value.fallback_ok


def test_a_model_told_to_fail_fails_every_try_and_leaves_the_script_to_others(
    fake: FakeBedrock,
) -> None:
    fake.fail_model(MODEL, Fail(503, "Service unavailable"))
    fake.script(Turn(text=["from the other model"]))

    with pytest.raises(ProviderError, match="ServiceUnavailableException"):
        collect(ask(max_retries=2))
    other = collect(dataclasses.replace(ask(), model_id="amazon.nova-micro-v1:0"))

    assert fake.model_ids() == [MODEL] * 3 + ["amazon.nova-micro-v1:0"]
    assert [e.text for e in other if isinstance(e, TextChunk)] == ["from the other model"]


def test_exception_mid_stream_is_a_provider_error(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], error_after=2))

    with pytest.raises(ProviderError, match="internalServerException") as caught:
        collect(ask(max_retries=2))

    assert len(fake.requests) == 1
    assert not caught.value.timeout


def test_connection_dropped_mid_stream_is_a_provider_error(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], cut_after=2))

    with pytest.raises(ProviderError):
        collect(ask())


def test_slow_answer_is_a_timeout(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["late"], delay=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout
    assert caught.value.code == "provider_timeout"


def test_stalled_stream_is_a_timeout(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["one ", "two"], hang=2.0))

    with pytest.raises(ProviderError) as caught:
        collect(ask(timeout=0.3))

    assert caught.value.timeout


def test_usage_is_normalised(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["ok"], usage=(120, 30)))

    finished = collect(ask())[-1]

    assert isinstance(finished, Finished)
    assert finished.usage.as_dict() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
    }


def test_max_tokens_stop_reason(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["cut sh"], stop="max_tokens"), Turn(text=["x"], stop="content_filtered"))

    assert collect(ask())[-1] == Finished(Usage(11, 7), "max_tokens")
    assert collect(ask())[-1] == Finished(Usage(11, 7), "other")


def test_closing_the_stream_early_releases_the_connection(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["one ", "two ", "three"], hang=5.0))

    async def read_one() -> tuple[ProviderEvent, bool]:
        stream = BedrockProvider().stream(ask())
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        # Returns as soon as the stream is dropped; the margin is a busy machine's.
        return first, await asyncio.to_thread(fake.disconnected.wait, 15.0)

    first, disconnected = asyncio.run(read_one())

    assert first == TextChunk("one ")
    assert disconnected
    assert _reader_threads_end()


def _reader_threads_end() -> bool:
    deadline = time.monotonic() + 15.0  # returns when it holds; the margin is a busy machine's
    while any(t.name == "bedrock-stream" for t in threading.enumerate()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_slow_stream_does_not_hold_up_another(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["slow"], delay=0.5), Turn(text=["fast"]))

    async def run() -> list[str]:
        finished: list[str] = []

        async def one(text: str) -> None:
            async for _ in BedrockProvider().stream(ask(text)):
                pass
            finished.append(text)

        slow = asyncio.create_task(one("first"))
        while not fake.requests:
            await asyncio.sleep(0.01)
        await one("second")
        await slow
        return finished

    assert asyncio.run(run()) == ["second", "first"]


def test_client_factory_caches_per_profile(fake: FakeBedrock) -> None:
    client = aws.client("bedrock-runtime", max_retries=2, timeout=30.0)

    assert aws.client("bedrock-runtime", max_retries=2, timeout=30) is client
    assert aws.client("bedrock-runtime", max_retries=3, timeout=30.0) is not client
    assert client.meta.endpoint_url == fake.url
    assert client.meta.config.read_timeout == 30.0
    assert client.meta.config.retries["total_max_attempts"] == 3


def test_fake_answers_converse_without_streaming(fake: FakeBedrock) -> None:
    fake.script(Turn(text=["Hello"], calls=[Call("get_weather", {"city": "Oslo"}, id="t9")]))
    client = aws.client("bedrock-runtime", max_retries=0, timeout=5.0)

    answer = client.converse(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Hi"}]}]
    )

    assert answer["output"]["message"]["content"] == [
        {"text": "Hello"},
        {"toolUse": {"toolUseId": "t9", "name": "get_weather", "input": {"city": "Oslo"}}},
    ]
    assert answer["stopReason"] == "tool_use"


@pytest.mark.parametrize("stream", [True, False])
def test_a_call_uses_converse_stream_only_when_its_deltas_are_read(
    fake: FakeBedrock, stream: bool
) -> None:
    calls = [Call("get_weather", {"city": "Oslo"}, id="t1"), Call("get_weather", {"city": "Rome"})]
    fake.script(Turn(text=["Let me ", "look."], calls=calls, usage=(120, 30), cached=100))

    events = collect(ask("Oslo and Rome?", tools=(WEATHER,), stream=stream))

    (path,) = [r.path for r in fake.requests]
    assert path.endswith("/converse-stream" if stream else "/converse")
    texts = [e.text for e in events if isinstance(e, TextChunk)]
    assert texts == (["Let me ", "look."] if stream else ["Let me look."])
    called = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in called] == [
        ("t1", "get_weather", {"city": "Oslo"}),
        (called[1].call_id, "get_weather", {"city": "Rome"}),
    ]
    assert events[-1] == Finished(Usage(120, 30, cached_input_tokens=100), "tool_use")


def test_a_refused_whole_answer_is_a_provider_error(fake: FakeBedrock) -> None:
    fake.script(Fail(400, "bad input"))

    with pytest.raises(ProviderError, match="bad input") as refused:
        collect(ask(stream=False))

    assert not refused.value.fallback_ok
    assert fake.requests[0].path.endswith("/converse")
