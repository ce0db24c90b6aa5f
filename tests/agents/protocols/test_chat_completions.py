"""OpenAI chat completions (agent-chat-completions-api.txt) end to end: the official `openai`
SDK, sync and async, unmodified, against a live uvicorn serving the project's ASGI app.

The stream is read back with the source document's own `get_messages`, copied verbatim.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.access.permissions import Action, grant
from agents.access.tokens import token_encode
from agents.examples import CALCULATOR, PERSON_EXTRACTOR
from agents.llm.base import ToolCallPart, Usage
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, Run
from agents.protocols.chat_completions import views as chat
from agents.protocols.chat_completions.encoder import (
    ARGUMENT_FRAGMENT_CHARS,
    ChunkEncoder,
    completion_body,
    usage_body,
)
from agents.protocols.chat_completions.request import ChatCompletionRequest
from agents.runtime.events import (
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agents.runtime.tools.functions import REGISTRY, FunctionSpec
from tests.fakes.server import Call, Turn
from tests.live import django_port, owner_token  # noqa: F401 (the fixtures port, token)
from tests.support.backends import MODELS, Backend, _backend, openai_server  # noqa: F401
from tests.support.chat import finished_run, get_messages

# Live tests are transactional: the server's threads only see committed rows.
# serialized_rollback restores the catalogs and the `default` environment the flush erases.
LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ASK = [{"role": "user", "content": "What is 3 x 5?"}]


# ---------------------------------------------------------------- the document's reader


# ---------------------------------------------------------------- the live server


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


@pytest.fixture
def openai_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _backend(request, "openai")


def agent_url(port: int, agent: Agent, version: str = "latest") -> str:
    return f"http://127.0.0.1:{port}/v1/agents/{agent.pk}/versions/{version}"


def sdk(port: int, token: str, agent: Agent | None = None) -> OpenAI:
    base = agent_url(port, agent) if agent else f"http://127.0.0.1:{port}/v1"
    return OpenAI(base_url=base, api_key=token, max_retries=0, timeout=20)


def async_sdk(port: int, token: str, agent: Agent | None = None) -> AsyncOpenAI:
    base = agent_url(port, agent) if agent else f"http://127.0.0.1:{port}/v1"
    return AsyncOpenAI(base_url=base, api_key=token, max_retries=0, timeout=20)


def raw_post(
    port: int, path: str, token: str, body: dict[str, Any], **headers: str
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers |= {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request("POST", path, body=json.dumps(body), headers=headers)
    return connection.getresponse()


def frames(raw: bytes) -> list[str]:
    """The SSE frames of a whole stream, comments included, in order."""
    text = raw.decode()
    assert text.endswith("\n\n"), text[-80:]
    return text.removesuffix("\n\n").split("\n\n")


def chunks(raw: bytes) -> list[dict[str, Any]]:
    found = [f for f in frames(raw) if f.startswith("data: ")]
    assert found[-1] == "data: [DONE]"
    return [json.loads(f.removeprefix("data: ")) for f in found[:-1]]


# ---------------------------------------------------------------- both modes, sync SDK


@LIVE
def test_non_streaming_answer_is_a_chat_completion(
    port: int, token: str, calculator: Agent
) -> None:
    client = sdk(port, token, calculator)
    before = int(time.time())

    raw = client.chat.completions.with_raw_response.create(
        model="calculator", messages=ASK, temperature=0.7, max_tokens=50
    )
    completion = raw.parse()

    assert raw.headers["content-type"] == "application/json"
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert before <= completion.created <= int(time.time())
    # `model` names the agent and version that answered; `llm_model` the model behind it.
    assert completion.model == "Calculator@1"
    assert completion.llm_model == LOCAL_MODEL  # type: ignore[attr-defined]
    [choice] = completion.choices
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.tool_calls is None
    assert "15" in (choice.message.content or "")
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

    run = finished_run(raw.headers["x-run-id"])
    assert run.protocol == "chat.completions"
    assert run.status == "completed"
    assert run.tokens_usage == {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool", "assistant"]
    assert run.messages[0] == {"role": "user", "content": "What is 3 x 5?"}
    assert run.messages[2]["content"] == "15"


@LIVE
def test_the_stream_on_the_wire_and_as_the_documents_get_messages_rebuilds_it(
    port: int, token: str, calculator: Agent
) -> None:
    client = sdk(port, token, calculator)
    answer = client.chat.completions.create(model="calculator", messages=ASK)

    with client.chat.completions.with_streaming_response.create(
        model="calculator", messages=ASK, stream=True
    ) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        run_id = response.headers["x-run-id"]
        rebuilt = get_messages(response.parse())

    [call_message, tool_message, reply] = rebuilt
    [call] = call_message["tool_calls"]
    assert call_message == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": "multiply", "arguments": '{"a": 3, "b": 5}'},
            }
        ],
    }
    assert call["id"]
    assert tool_message == {"role": "tool", "content": "15", "tool_call_id": call["id"]}
    assert reply["role"] == "assistant"
    assert "15" in reply["content"]
    assert reply == {"role": "assistant", "content": answer.choices[0].message.content}

    # The rebuilt turn is what the run recorded, and it can be sent back as history.
    run = finished_run(run_id)
    assert run.protocol == "chat.completions"
    assert run.status == "completed"
    assert run.messages[1:] == [
        {**call_message, "tool_calls": call_message["tool_calls"]},
        {**tool_message, "name": "multiply"},
        reply,
    ]
    follow_up = [*ASK, *rebuilt, {"role": "user", "content": "And 2 x 4?"}]
    again = client.chat.completions.create(model="calculator", messages=follow_up)
    assert "8" in (again.choices[0].message.content or "")

    # The same stream, byte by byte.
    path = f"/v1/agents/{calculator.pk}/versions/1/chat/completions"
    body = {"model": "x", "messages": ASK, "stream": True}

    response = raw_post(port, path, token, body, Accept="text/event-stream")

    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    listed = chunks(response.read())
    # One id per message: the assistant's call, the tool's result, the reply; each
    # message's chunks in one run.
    ids = list(dict.fromkeys(c["id"] for c in listed))
    assert len(ids) == 3
    assert [c["id"] for c in listed] == sorted((c["id"] for c in listed), key=ids.index)
    for chunk in listed:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == "Calculator@1"
        assert chunk["llm_model"] == LOCAL_MODEL
        assert "usage" not in chunk  # only with stream_options.include_usage
    first_of = {c["id"]: c["choices"][0]["delta"] for c in reversed(listed)}
    assert [first_of[i]["role"] for i in ids] == ["assistant", "tool", "assistant"]
    call_chunks = [c for c in listed if c["id"] == ids[0]]
    deltas = [c["choices"][0]["delta"] for c in call_chunks]
    assert deltas[0] == {"role": "assistant", "content": None}
    name_chunk, *argument_chunks = [d["tool_calls"][0] for d in deltas[1:-1]]
    assert name_chunk["function"] == {"name": "multiply", "arguments": ""}
    assert name_chunk["index"] == 0
    assert name_chunk["type"] == "function"
    assert all(set(c) == {"index", "function"} for c in argument_chunks)
    assert "".join(c["function"]["arguments"] for c in argument_chunks) == '{"a": 3, "b": 5}'
    assert call_chunks[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "tool_calls",
    }
    [result] = [c for c in listed if c["id"] == ids[1]]
    assert result["choices"][0]["delta"] == {
        "role": "tool",
        "tool_call_id": name_chunk["id"],
        "content": "15",
    }
    assert result["choices"][0]["finish_reason"] is None
    assert listed[-1]["choices"][0]["finish_reason"] == "stop"
    assert listed[-1]["choices"][0]["delta"] == {}


# ---------------------------------------------------------------- async SDK, usage


@LIVE
def test_async_sdk_streams_with_a_usage_chunk_and_answers_without_stream(
    port: int, token: str, calculator: Agent
) -> None:
    async def talk() -> tuple[list[Any], Any]:
        client = async_sdk(port, token, calculator)
        stream = await client.chat.completions.create(
            model="calculator",
            messages=ASK,
            stream=True,
            stream_options={"include_usage": True},
        )
        streamed = [chunk async for chunk in stream]
        plain = await client.chat.completions.create(model="calculator", messages=ASK)
        await client.close()
        return streamed, plain

    streamed, plain = asyncio.run(talk())

    *messages, last = streamed
    assert last.choices == []
    assert last.usage is not None
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert all(chunk.usage is None for chunk in messages)
    assert messages[-1].choices[0].finish_reason == "stop"
    # The same question costs the same tokens with or without the stream.
    assert plain.usage is not None
    assert last.usage.model_dump() == plain.usage.model_dump()
    text = "".join(c.choices[0].delta.content or "" for c in messages if c.id == messages[-1].id)
    assert text == plain.choices[0].message.content


# ---------------------------------------------------------------- the model-naming route


@LIVE
def test_model_names_the_agent_of_the_callers_environment(
    port: int, token: str, calculator: Agent, make_agent: Any, other_env: Any, owner: Any
) -> None:
    twin = make_agent("calculator", environment=other_env, config=CALCULATOR["config"])
    client = sdk(port, token)

    for model in ("Calculator", "calculator", "CALCULATOR@1", "calculator@latest"):
        raw = client.chat.completions.with_raw_response.create(model=model, messages=ASK)
        assert "15" in (raw.parse().choices[0].message.content or ""), model
        assert finished_run(raw.headers["x-run-id"]).agent_id == calculator.pk

    # In `other` (the token's environment) the name is the twin's, which the owner of
    # `default` may not see.
    elsewhere = token_encode(user_id=owner.pk, environment_id=str(other_env.pk))[0]
    with pytest.raises(openai.NotFoundError):
        sdk(port, elsewhere).chat.completions.create(model="calculator", messages=ASK)
    assert not Run.objects.filter(agent=twin).exists()

    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="calculatr", messages=ASK)
    assert unknown.value.status_code == 404
    assert unknown.value.code == "model_not_found"
    assert unknown.value.type == "invalid_request_error"
    for missing in ("calculator@2", "calculator@no-such-alias"):
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model=missing, messages=ASK)
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="calculator@2x", messages=ASK)
    assert bad.value.param == "model"


# ---------------------------------------------------------------- refusals


@LIVE
def test_refusals_are_openai_errors_the_sdk_raises(
    port: int, token: str, calculator: Agent, stranger: Any, make_agent: Any
) -> None:
    client = sdk(port, token, calculator)

    with pytest.raises(openai.AuthenticationError) as unauthenticated:
        sdk(port, "not-a-token", calculator).chat.completions.create(
            model="calculator", messages=ASK
        )
    assert unauthenticated.value.code == "invalid_api_key"

    mcp = {"integration_fqn": "common-tools", "enable_all_tools": False, "tools": [{"name": "x"}]}
    with pytest.raises(openai.BadRequestError) as unknown_server:
        client.chat.completions.create(
            model="calculator", messages=ASK, extra_body={"mcp_servers": [mcp]}
        )
    assert unknown_server.value.param == "mcp_servers[0].integration_fqn"
    assert unknown_server.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as malformed:
        client.chat.completions.create(
            model="calculator",
            messages=ASK,
            extra_body={"mcp_servers": [{**mcp, "url": "https://mcp.example"}]},
        )
    assert malformed.value.param == "mcp_servers[0]"

    orphan = [*ASK, {"role": "tool", "tool_call_id": "call_1", "content": "15"}]
    with pytest.raises(openai.BadRequestError) as orphaned:
        client.chat.completions.create(model="calculator", messages=orphan)  # type: ignore[arg-type]
    assert orphaned.value.param == "messages[1].tool_call_id"

    with pytest.raises(openai.BadRequestError) as own_tools:
        client.chat.completions.create(
            model="calculator",
            messages=ASK,
            tools=[{"type": "function", "function": {"name": "f"}}],
        )
    assert own_tools.value.param == "tools"
    # A caller who may not READ the agent: 404; READ without INVOKE: 403.
    outsider = token_encode(user_id=stranger.pk, environment_id=None)[0]
    with pytest.raises(openai.NotFoundError):
        sdk(port, outsider, calculator).chat.completions.create(model="x", messages=ASK)
    grant(stranger, Action.READ, calculator)
    with pytest.raises(openai.PermissionDeniedError) as forbidden:
        sdk(port, outsider).chat.completions.create(model="calculator", messages=ASK)
    assert forbidden.value.type == "permission_error"
    # Only the unknown server came after the version was resolved: its run failed, and
    # nothing else the callers sent started one.
    (failed,) = Run.objects.all()
    assert (failed.status, failed.error["code"]) == ("failed", "invalid_request")
    Run.objects.all().delete()

    # A task agent is refused after its run was opened: the answer names the failed run.
    task = make_agent("Rater", "task")
    with pytest.raises(openai.BadRequestError) as wrong_type:
        sdk(port, token, task).chat.completions.create(model="x", messages=ASK)
    assert wrong_type.value.message.endswith(
        "Agent type task not supported in /chat/completions endpoints."
        " Call a task agent with POST .../invoke-task (or /invoke-task-stream) and its `inputs`."
    )
    run = Run.objects.get(pk=wrong_type.value.response.headers["x-run-id"])
    assert (run.agent_id, run.status, run.protocol) == (task.pk, "failed", "chat.completions")


# ---------------------------------------------------------------- iteration limit, failures


@LIVE
def test_iteration_limit_counts_rounds_of_tools_and_a_run_past_it_fails(
    port: int, token: str, openai_backend: Backend, make_agent: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=openai_backend.config(CALCULATOR["config"]))
    client = sdk(port, token, agent)
    call = Turn(calls=[Call("multiply", {"a": 3, "b": 5})])
    fake = openai_backend.fake
    assert fake is not None

    for limit in (0, 21):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="x", messages=ASK, extra_body={"iteration_limit": limit}
            )
        assert refused.value.param == "iteration_limit"
        assert refused.value.type == "invalid_request_error"
    assert not fake.requests  # refused before any model call

    # One iteration is user → model → tool call → tool result → model: it fits in 1.
    openai_backend.script(call, Turn(text=["15"]))
    completion = client.chat.completions.create(
        model="x", messages=ASK, extra_body={"iteration_limit": 1}
    )
    assert completion.choices[0].message.content == "15"
    assert len(fake.requests) == 2

    # A model that calls tools again after its last round: the stream began, so the
    # failure is OpenAI's mid-stream error event, then [DONE].
    fake.reset()
    openai_backend.script(call, call)
    path = f"/v1/agents/{agent.pk}/versions/latest/chat/completions"
    response = raw_post(port, path, token, {"messages": ASK, "stream": True, "iteration_limit": 1})
    assert response.status == 200
    found = [f for f in frames(response.read()) if f.startswith("data: ")]
    assert found[-1] == "data: [DONE]"
    error = json.loads(found[-2].removeprefix("data: "))
    assert set(error) == {"error"}
    assert error["error"]["code"] == "max_iterations"
    assert error["error"]["type"] == "server_error"
    assert set(error["error"]) == {"message", "type", "param", "code"}
    assert len(fake.requests) == 2
    assert finished_run(response.getheader("X-Run-Id") or "").status == "failed"

    # The SDK raises it mid-stream; without the stream it is a 502 not to be retried.
    openai_backend.script(call, call, call, call)
    with pytest.raises(openai.APIError) as mid_stream:
        list(
            client.chat.completions.create(
                model="x", messages=ASK, stream=True, extra_body={"iteration_limit": 1}
            )
        )
    assert mid_stream.value.code == "max_iterations"
    with pytest.raises(openai.InternalServerError) as answered:
        client.chat.completions.create(model="x", messages=ASK, extra_body={"iteration_limit": 1})
    assert answered.value.status_code == 502
    assert answered.value.response.headers["x-should-retry"] == "false"
    assert answered.value.code == "max_iterations"
    assert answered.value.response.headers["x-run-id"]


# ---------------------------------------------------------------- parallel calls (fake model)


@LIVE
def test_parallel_tool_calls_stream_with_indexes_0_and_1(
    port: int, token: str, openai_backend: Backend, make_agent: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=openai_backend.config(CALCULATOR["config"]))
    openai_backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}), Call("multiply", {"a": 2, "b": 4})]),
        Turn(text=["3 x 5 is 15 ", "and 2 x 4 is 8."]),
    )
    client = sdk(port, token, agent)

    stream = client.chat.completions.create(
        model="calculator", messages=[{"role": "user", "content": "3x5 and 2x4?"}], stream=True
    )
    listed = list(stream)

    indexes = [c.index for chunk in listed for c in chunk.choices[0].delta.tool_calls or []]
    assert sorted(set(indexes)) == [0, 1]
    rebuilt = get_messages(iter(listed))
    assert [m["role"] for m in rebuilt] == ["assistant", "tool", "tool", "assistant"]
    first, second = rebuilt[0]["tool_calls"]
    assert json.loads(first["function"]["arguments"]) == {"a": 3, "b": 5}
    assert json.loads(second["function"]["arguments"]) == {"a": 2, "b": 4}
    assert [(m["tool_call_id"], m["content"]) for m in rebuilt[1:3]] == [
        (first["id"], "15"),
        (second["id"], "8"),
    ]
    assert rebuilt[3]["content"] == "3 x 5 is 15 and 2 x 4 is 8."
    assert {c.llm_model for c in listed} == {MODELS["openai"]}  # type: ignore[attr-defined]
    # The model got both results back, under the ids it gave.
    assert openai_backend.tool_results(1) == {first["id"]: "15", second["id"]: "8"}


@LIVE
def test_a_client_that_hangs_up_mid_stream_cancels_the_run(
    port: int, token: str, openai_backend: Backend, make_agent: Any
) -> None:
    agent = make_agent("Counter", "tool", config=openai_backend.config(CALCULATOR["config"]))
    # Two deltas, then the model holds its stream open far longer than the test waits.
    openai_backend.script(Turn(text=["Counting: ", "one, "], pause=0.05, hang=30))
    path = f"/v1/agents/{agent.pk}/versions/latest/chat/completions"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request("POST", path, json.dumps({"messages": ASK, "stream": True}), headers)
    response = connection.getresponse()
    run_id = response.getheader("X-Run-Id") or ""
    read = b""
    while read.count(b"\n\n") < 3:  # the role chunk and both deltas
        read += response.read1()
    assert Run.objects.get(pk=run_id).status == "in_progress"

    assert connection.sock is not None
    connection.sock.shutdown(socket.SHUT_RDWR)
    connection.close()

    fake = openai_backend.fake
    assert fake is not None
    assert fake.disconnected.wait(15), "the model call was not abandoned"  # busy machines
    run = finished_run(run_id)
    assert run.status == "canceled"
    assert run.messages[0] == {"role": "user", "content": "What is 3 x 5?"}


# ---------------------------------------------------------------- structured answers


@LIVE
def test_a_structured_answer_is_the_replys_content_without_a_dangling_call(
    port: int, token: str, make_agent: Any
) -> None:
    agent = make_agent("PersonExtractor", "tool", config=PERSON_EXTRACTOR["config"])
    ask = [{"role": "user", "content": "John Doe is a 35 year old software engineer."}]
    client = sdk(port, token, agent)

    plain = client.chat.completions.create(model="x", messages=ask)
    rebuilt = get_messages(client.chat.completions.create(model="x", messages=ask, stream=True))

    content = plain.choices[0].message.content or ""
    assert json.loads(content)["name"] == "John Doe"
    assert rebuilt == [{"role": "assistant", "content": content}]


# ---------------------------------------------------------------- keep-alive


def slow_multiply(a: float, b: float) -> float:
    """Multiply two numbers (a × b) slowly and return the product."""
    time.sleep(0.3)
    return a * b


@LIVE
def test_a_slow_tool_gets_keep_alive_comments(
    port: int, token: str, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat, "KEEPALIVE_SECONDS", 0.05)
    monkeypatch.setitem(
        REGISTRY,
        "slow_multiply",
        FunctionSpec(
            "slow_multiply",
            "Multiply two numbers slowly",
            REGISTRY["multiply"].parameters,
            slow_multiply,
        ),
    )
    config = {
        **CALCULATOR["config"],
        "tools": [
            {
                "toolType": "function",
                "name": "multiply",
                "description": "Multiplies two numbers",
                "funcName": "slow_multiply",
            }
        ],
    }
    agent = make_agent("SlowCalculator", "tool", config=config)
    path = f"/v1/agents/{agent.pk}/versions/latest/chat/completions"

    response = raw_post(port, path, token, {"messages": ASK, "stream": True})

    listed = frames(response.read())
    kinds = [
        "keep-alive"
        if f == ": keep-alive"
        else "done"
        if f == "data: [DONE]"
        else json.loads(f.removeprefix("data: "))["choices"][0]["finish_reason"]
        or json.loads(f.removeprefix("data: "))["choices"][0]["delta"].get("role")
        or "delta"
        for f in listed
    ]
    # While the tool ran: after the call was sent whole, before its result (which the
    # close of the call phase, finish_reason "tool_calls", comes right before).
    first, closed = kinds.index("keep-alive"), kinds.index("tool_calls")
    assert kinds[:first] == ["assistant", "delta", "delta"]  # role, name, arguments
    assert kinds[first:closed] == ["keep-alive"] * (closed - first)
    assert closed - first >= 2
    assert kinds[closed + 1] == "tool"
    assert "keep-alive" not in kinds[closed:]
    assert kinds[-1] == "done"
    # The SDK reads past the comments.
    rebuilt = get_messages(
        sdk(port, token, agent).chat.completions.create(model="x", messages=ASK, stream=True)
    )
    call_id = rebuilt[0]["tool_calls"][0]["id"]
    assert rebuilt[1] == {"role": "tool", "content": "15", "tool_call_id": call_id}


# ---------------------------------------------------------------- the encoder, no server

CREATED = ResponseCreated("resp_0123abcd", "some-model", 1760632921)


def encode(events: list[Any], **options: Any) -> list[bytes]:
    encoder = ChunkEncoder(include_usage=options.pop("include_usage", False), **options)
    return [frame for event in [CREATED, *events] for frame in encoder.encode(event)]


def sdk_chunks(encoded: list[bytes]) -> list[ChatCompletionChunk]:
    """The chunks as the SDK parses them; the stream must end with [DONE]."""
    assert encoded[-1] == b"data: [DONE]\n\n"
    texts = [frame.decode().removeprefix("data: ").removesuffix("\n\n") for frame in encoded]
    return [ChatCompletionChunk.model_validate(json.loads(text)) for text in texts[:-1]]


def test_text_before_calls_shares_their_message_and_a_retried_answer_shows_its_call() -> None:
    schema_miss = "the object does not match the schema. Call the tool again."
    encoded = encode(
        [
            TextDelta("Let me "),
            TextDelta("extract that."),
            ToolCall("c1", "structured_output", '{"age": 35}'),
            ToolResult("c1", "structured_output", schema_miss, is_error=True),
            ToolCall("c2", "structured_output", '{"name": "Jo"}'),
            ResponseCompleted(Usage(5, 3), structured={"name": "Jo"}, object_answer=True),
        ],
        answer_tools=frozenset({"structured_output"}),
    )

    assert get_messages(sdk_chunks(encoded)) == [
        {
            "role": "assistant",
            "content": "Let me extract that.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "structured_output", "arguments": '{"age": 35}'},
                }
            ],
        },
        {"role": "tool", "content": schema_miss, "tool_call_id": "c1"},
        {"role": "assistant", "content": '{"name": "Jo"}'},
    ]


def test_long_arguments_stream_in_fragments_the_reader_joins() -> None:
    arguments = json.dumps({"query": "x" * (3 * ARGUMENT_FRAGMENT_CHARS)})
    encoded = encode(
        [
            ToolCall("c1", "search", arguments),
            ToolCall("c2", "search", "{}"),
            ToolResult("c1", "search", "[]"),
            ToolResult("c2", "search", "[]"),
            ResponseCompleted(Usage(1, 1), text=""),
        ]
    )
    parsed = sdk_chunks(encoded)

    fragments = [
        call.function.arguments
        for chunk in parsed
        for call in chunk.choices[0].delta.tool_calls or []
        if call.index == 0 and call.function and call.function.arguments
    ]
    assert len(fragments) == 4
    rebuilt = get_messages(parsed)
    assert [c["function"]["arguments"] for c in rebuilt[0]["tool_calls"]] == [arguments, "{}"]
    # No text after the tools: the reply is still there, empty, and closes the turn.
    assert rebuilt[-1] == {"role": "assistant", "content": ""}
    assert parsed[-1].choices[0].finish_reason == "stop"
    ids = [chunk.id for chunk in parsed]
    assert ids[0] == "chatcmpl-0123abcd-1"
    assert len(set(ids)) == 4  # the calls, two results, the reply


def test_custom_outputs_ride_on_the_stop_chunk_and_usage_comes_last() -> None:
    outputs = {"sourceNodes": [], "ragMode": "normal"}
    encoded = encode(
        [
            TextDelta("From the handbook."),
            ResponseCompleted(Usage(7, 2), "x", None, False, outputs),
        ],
        include_usage=True,
    )
    *messages, usage = [json.loads(f[len(b"data: ") :]) for f in encoded[:-1]]

    assert messages[-1]["custom_outputs"] == outputs
    assert messages[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(m["usage"] is None for m in messages)
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}


def test_a_failure_is_an_error_event_then_done() -> None:
    encoded = encode([TextDelta("Hal"), ResponseFailed("provider_error", "Bedrock said no")])

    assert encoded[-2:] == [
        b'data: {"error":{"message":"Bedrock said no","type":"server_error",'
        b'"param":null,"code":"provider_error"}}\n\n',
        b"data: [DONE]\n\n",
    ]


def test_a_blocked_answer_is_the_guardrails_message_without_the_stream() -> None:
    blocked = {"guardrail": {"action": "BLOCKED", "name": "HAIP-Profanity", "stage": "output"}}
    events = [
        CREATED,
        TextDelta("Well. "),
        TextDelta("Sorry, I cannot say that."),
        ResponseCompleted(Usage(3, 4), "Sorry, I cannot say that.", custom_outputs=blocked),
    ]

    body = completion_body(events)

    assert body["choices"][0]["message"]["content"] == "Sorry, I cannot say that."
    assert body["custom_outputs"] == blocked
    assert body["id"] == "chatcmpl-0123abcd"


def test_history_maps_to_runtime_messages_and_unanswered_calls_are_refused() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "multiply", "arguments": ""}}
    history = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "3x5?"},
        {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
        {"role": "tool", "tool_call_id": "c1", "content": "15"},
        {"role": "assistant", "content": "15"},
        {"role": "user", "content": "And 2x4?"},
    ]

    messages = parse(ChatCompletionRequest, {"messages": history}, "body").runtime_messages()

    assert [m.role for m in messages] == ["user", "user", "assistant", "tool", "assistant", "user"]
    assert messages[0].text == "Be brief."
    assert messages[2].tool_calls == (ToolCallPart("c1", "multiply", "{}"),)
    assert (messages[3].tool_call_id, messages[3].name, messages[3].text) == (
        "c1",
        "multiply",
        "15",
    )
    unanswered = parse(ChatCompletionRequest, {"messages": history[:3] + history[4:]}, "body")
    with pytest.raises(Invalid) as refused:
        unanswered.runtime_messages()
    assert refused.value.errors[0].loc == ("body", "messages", 2, "tool_calls", 0, "id")


BAD_MESSAGES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "unknown role": ([{"role": "wizard", "content": "hi"}], "messages[0].role"),
    "tool message without tool_call_id": (
        [*ASK, {"role": "tool", "content": "15"}],
        "messages[1].tool_call_id",
    ),
    "no messages": ([], "messages"),
    "user message without content": ([{"role": "user"}], "messages[0].content"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_MESSAGES))
def test_bad_messages_are_openai_400s_before_any_run(
    case: str, owner_client: Any, calculator: Agent
) -> None:
    messages, param = BAD_MESSAGES[case]
    answer = owner_client.post(
        "/v1/chat/completions", {"model": "calculator", "messages": messages}, format="json"
    )
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param, error
    assert error["message"]
    assert not Run.objects.exists()


def test_usage_reports_cached_input_as_openai_does_and_only_when_there_was_some() -> None:
    cached = CompletionUsage.model_validate(usage_body(Usage(100, 10, cached_input_tokens=80)))
    assert cached.prompt_tokens == 100
    assert cached.prompt_tokens_details is not None
    assert cached.prompt_tokens_details.cached_tokens == 80
    assert "prompt_tokens_details" not in usage_body(Usage(100, 10))
