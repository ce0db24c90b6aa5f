"""The runtime's events as A2A task updates (agents.protocols.a2a.encoder), without a server:
the artifact a client assembles from the chunks is the answer, whatever came before it."""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from agents.llm.base import Usage
from agents.protocols.a2a.dialects import Dialect
from agents.protocols.a2a.encoder import Canceled, SseEncoder, TaskEncoder, Update
from agents.runtime.events import (
    Intervention,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)

USER = pb.Message(message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text="What is 3 x 5?")])
CREATED = ResponseCreated("resp_1", "local.demo-v1", 1_700_000_000)
USAGE = Usage(10, 5)


def encode(*events: Update) -> tuple[TaskEncoder, list[pb.StreamResponse]]:
    encoder = TaskEncoder("task-1", "ctx-1", USER)
    return encoder, [update for event in events for update in encoder.updates(event)]


def assembled(updates: list[pb.StreamResponse]) -> tuple[str, list[Any]]:
    """The artifact's text and data as A2A's append rule builds it from the chunks."""
    parts: list[pb.Part] = []
    for update in updates:
        if update.HasField("artifact_update"):
            chunk = update.artifact_update
            parts = [*parts, *chunk.artifact.parts] if chunk.append else list(chunk.artifact.parts)
    text = "".join(p.text for p in parts if p.WhichOneof("content") == "text")
    data = [MessageToDict(p)["data"] for p in parts if p.WhichOneof("content") == "data"]
    return text, data


def kinds(updates: list[pb.StreamResponse]) -> list[str]:
    return [str(u.WhichOneof("payload")) for u in updates]


def test_deltas_stream_as_chunks_and_the_last_one_says_so() -> None:
    done = ResponseCompleted(USAGE, text="Hello there.")
    encoder, updates = encode(CREATED, TextDelta("Hello "), TextDelta("there."), done)

    assert kinds(updates) == ["task", "artifact_update", "artifact_update", "status_update"]
    first, last = updates[1].artifact_update, updates[2].artifact_update
    assert (first.append, first.last_chunk) == (False, False)
    assert (last.append, last.last_chunk) == (True, True)
    assert assembled(updates) == ("Hello there.", [])
    assert updates[0].task.history[0].task_id == "task-1"
    assert updates[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
    assert MessageToDict(updates[-1].status_update.metadata)["tokensUsage"]["total_tokens"] == 15
    assert encoder.final is not None
    assert encoder.final.artifacts[0].parts[0].text == "Hello there."


def test_text_before_a_tool_call_is_replaced_by_the_answer_after_it() -> None:
    _, updates = encode(
        CREATED,
        TextDelta("Let me compute."),
        ToolCall("call-1", "multiply", '{"a": 3, "b": 5}'),
        ToolResult("call-1", "multiply", "15"),
        TextDelta("It is "),
        TextDelta("15."),
        ResponseCompleted(USAGE, text="It is 15."),
    )

    assert kinds(updates) == [
        "task",
        "artifact_update",
        "status_update",
        "status_update",
        "artifact_update",
        "artifact_update",
        "status_update",
    ]
    assert assembled(updates) == ("It is 15.", [])
    call = MessageToDict(updates[2].status_update.status.message.parts[0])["data"]
    assert call == {
        "toolCall": {"id": "call-1", "name": "multiply", "arguments": '{"a": 3, "b": 5}'}
    }
    assert updates[2].status_update.status.state == pb.TASK_STATE_WORKING


def test_an_answer_a_guardrail_replaced_replaces_the_streamed_text() -> None:
    blocked = Intervention("HAIP-Profanity", "output", "Sorry, I can't share that answer.")
    done = ResponseCompleted(
        USAGE,
        text="All good so far. ",
        intervention=blocked,
        custom_outputs=blocked.custom_outputs(),
    )

    _, updates = encode(CREATED, TextDelta("All good so far. "), done)

    last = updates[-2].artifact_update
    assert (last.append, last.last_chunk) == (False, True)
    assert assembled(updates) == ("Sorry, I can't share that answer.", [])
    assert MessageToDict(last.artifact.metadata)["customOutputs"] == blocked.custom_outputs()


def test_a_structured_answer_ends_with_its_object_as_a_data_part() -> None:
    person = {"name": "John Doe", "age": 35}
    done = ResponseCompleted(USAGE, structured=person, object_answer=True)

    _, updates = encode(CREATED, done)

    text, data = assembled(updates)
    assert data == [{"name": "John Doe", "age": 35.0}]  # protobuf's numbers; JSON writes 35
    assert text == '{"name": "John Doe", "age": 35}'


def test_a_failure_and_a_cancel_end_the_task_with_their_state() -> None:
    _, failed = encode(CREATED, TextDelta("Part"), ResponseFailed("provider_error", "boom"))
    _, canceled = encode(CREATED, TextDelta("Part"), Canceled())

    for updates, state in ((failed, pb.TASK_STATE_FAILED), (canceled, pb.TASK_STATE_CANCELED)):
        assert kinds(updates) == ["task", "artifact_update", "status_update"]
        assert updates[-1].status_update.status.state == state
    message = failed[-1].status_update.status.message
    assert message.parts[0].text == "provider_error: boom"
    assert MessageToDict(failed[-1].status_update.metadata)["error"]["code"] == "provider_error"


def test_both_dialects_write_the_same_update_as_their_sse_frames() -> None:
    done = ResponseCompleted(USAGE, text="Hi.")
    frames: dict[Dialect, list[bytes]] = {}
    for dialect in Dialect:
        encoder = SseEncoder(TaskEncoder("t", "c", USER), 9, dialect)
        frames[dialect] = [f for e in (CREATED, TextDelta("Hi."), done) for f in encoder.frames(e)]

    assert frames[Dialect.V1][0].startswith(b'data: {"jsonrpc":"2.0","id":9,"result":{"task":')
    assert b'"kind":"task"' in frames[Dialect.V03][0]
    assert b'"state":"completed"' in frames[Dialect.V03][-1]
    assert b'"final":true' in frames[Dialect.V03][-1]
    assert b'"TASK_STATE_COMPLETED"' in frames[Dialect.V1][-1]
    assert b'"total_tokens":15' in frames[Dialect.V1][-1]  # ints, not protobuf's 15.0
