"""A run as an A2A task: the runtime's events as task updates, a run record as a Task.

The stream (`message/stream`, `SendStreamingMessage`):

    Task                      state working, the user's message as history
    TaskArtifactUpdateEvent   artifact `answer`: text deltas, `append` after the first;
                              the last chunk `lastChunk`, with a data part for a structured
                              answer and `customOutputs` (RAG sources, a guardrail's verdict)
                              in the artifact's metadata
    TaskStatusUpdateEvent     working, a data part per tool call and per tool result
    TaskStatusUpdateEvent     completed (usage in metadata), failed (the error), canceled

Text before a tool call is the model thinking aloud, not the answer: the next text replaces
it (`append` false). When the answer differs from the text streamed (an output guardrail
replaced it, the answer is an object) the last chunk replaces the artifact with it. So the
artifact a client assembles is the answer of `message/send`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any, assert_never

from a2a.compat.v0_3 import conversions
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from agents.models import Run, RunStatus
from agents.protocols.a2a.dialects import Dialect
from agents.protocols.a2a.errors import RequestId
from agents.protocols.a2a.request import whole_numbers
from agents.protocols.sse import sse
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agents.runtime.failures import FailureCode

ARTIFACT_ID = "answer"
STATES = {
    RunStatus.QUEUED: pb.TASK_STATE_SUBMITTED,
    RunStatus.IN_PROGRESS: pb.TASK_STATE_WORKING,
    RunStatus.AWAITING_APPROVAL: pb.TASK_STATE_INPUT_REQUIRED,
    RunStatus.COMPLETED: pb.TASK_STATE_COMPLETED,
    RunStatus.FAILED: pb.TASK_STATE_FAILED,
    RunStatus.CANCELED: pb.TASK_STATE_CANCELED,
}
KEEPALIVE = b": keep-alive\n\n"


class Canceled:
    """The run was canceled by `tasks/cancel`: the stream's last update says so."""


Update = Event | Canceled


# ---------------------------------------------------------------- parts and messages


def text_part(text: str) -> pb.Part:
    return pb.Part(text=text)


def data_part(value: Any) -> pb.Part:
    part = pb.Part()
    # Marked present before it is filled: updating with nothing (`{}`, `[]`) sets no field,
    # and a part with no content is one neither dialect can write (0.3's conversion raises).
    if isinstance(value, dict):
        part.data.struct_value.SetInParent()
        part.data.struct_value.update(value)
    else:
        part.data.list_value.SetInParent()
        part.data.list_value.extend(value)
    return part


def agent_message(task_id: str, context_id: str, parts: Iterable[pb.Part]) -> pb.Message:
    return pb.Message(
        message_id=uuid.uuid4().hex,
        task_id=task_id,
        context_id=context_id,
        role=pb.ROLE_AGENT,
        parts=list(parts),
    )


def status(state: int, message: pb.Message | None = None) -> pb.TaskStatus:
    result = pb.TaskStatus(state=state)  # type: ignore[arg-type]
    result.timestamp.GetCurrentTime()
    if message is not None:
        result.message.CopyFrom(message)
    return result


def answer_parts(answer: str | dict[str, Any] | None, text: str, structured: Any) -> list[pb.Part]:
    parts = [text_part(text)]
    if structured is not None:
        parts.append(data_part(structured))
    elif isinstance(answer, dict):
        parts.append(data_part(answer))
    return parts


def failure_message(task_id: str, context_id: str, code: str, message: str) -> pb.Message:
    return agent_message(task_id, context_id, [text_part(f"{code}: {message}")])


def approval_message(
    task_id: str, context_id: str, waiting: list[tuple[str, str, str]]
) -> pb.Message:
    """What an input-required task asks (docs/api.md#a2a): the calls that wait, in words
    and as data a client can answer with a `decisions` data part on the same task."""
    names = ", ".join(name for _, name, _ in waiting)
    said = (
        f"Waiting for a person to approve: {names}. Answer on this task with a data part "
        '{"decisions": [{"approvalRequestId", "decision": "approve" | "reject", "message"?}]}.'
    )
    requests = [
        {"approvalRequestId": request_id, "name": name, "arguments": arguments}
        for request_id, name, arguments in waiting
    ]
    return agent_message(
        task_id, context_id, [text_part(said), data_part({"approvalRequests": requests})]
    )


# ---------------------------------------------------------------- the stream


class TaskEncoder:
    """Events in, task updates out (StreamResponse objects); one encoder per task."""

    def __init__(self, task_id: str, context_id: str, user: pb.Message) -> None:
        self.task_id, self.context_id = task_id, context_id
        self.user = pb.Message()
        self.user.CopyFrom(user)
        self.user.task_id, self.user.context_id = task_id, context_id
        self.held: str | None = None  # the last delta, sent when we know if it is the last
        self.sent = ""  # text of the artifact so far
        self.chunks = 0  # chunks of the artifact so far
        self.final: pb.Task | None = None  # the task as it ended, for message/send

    def submitted(self) -> pb.Task:
        """The task as it is queued for a worker: submitted, with the user's message."""
        task = pb.Task(id=self.task_id, context_id=self.context_id, history=[self.user])
        task.status.CopyFrom(status(pb.TASK_STATE_SUBMITTED))
        return task

    def working(self) -> pb.Task:
        """The task as it starts: working on the user's message."""
        task = pb.Task(id=self.task_id, context_id=self.context_id, history=[self.user])
        task.status.CopyFrom(status(pb.TASK_STATE_WORKING))
        return task

    def updates(self, event: Update) -> list[pb.StreamResponse]:
        if isinstance(event, ResponseCreated):
            task = self.working()
            task.metadata.update({"model": event.model})
            return [pb.StreamResponse(task=task)]
        if isinstance(event, TextDelta):
            out = self._flush()
            self.held = event.text
            return out
        if isinstance(event, ToolCall):
            out = self._flush()
            self.sent, self.chunks = "", 0  # text before a call was not the answer
            call = {"id": event.call_id, "name": event.name, "arguments": event.arguments}
            return [*out, self._working({"toolCall": call})]
        if isinstance(event, ToolResult):
            result = {"id": event.call_id, "name": event.name, "content": event.content}
            return [self._working({"toolResult": result})]
        if isinstance(event, ResponseCompleted):
            return self._completed(event)
        if isinstance(event, ResponseFailed) and event.code is FailureCode.CANCELED:
            # A cancel reached the run (tasks/cancel, from any process): the one path ends
            # the canceled run's stream so, unrecorded (the run's status says it).
            return [*self._flush(), self._end(pb.TASK_STATE_CANCELED)]
        if isinstance(event, ResponseFailed):
            message = failure_message(self.task_id, self.context_id, event.code, event.message)
            error = {"error": {"code": event.code, "message": event.message}}
            return [*self._flush(), self._end(pb.TASK_STATE_FAILED, message, error)]
        if isinstance(event, Canceled):
            return [*self._flush(), self._end(pb.TASK_STATE_CANCELED)]
        assert_never(event)

    def release_held(self) -> None:
        """The held delta went out another way (a subscriber's opening task): count it as
        a sent chunk, so updates append after it. The end then sends the whole answer,
        replacing, since there is no held delta left to close it with."""
        if self.held is not None:
            self.sent += self.held
            self.held = None
            self.chunks += 1

    def _artifact(
        self, parts: list[pb.Part], *, append: bool, last: bool, metadata: dict[str, Any]
    ) -> pb.StreamResponse:
        artifact = pb.Artifact(artifact_id=ARTIFACT_ID, name="answer", parts=parts)
        if metadata:
            artifact.metadata.update(metadata)
        update = pb.TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            append=append,
            last_chunk=last,
        )
        self.chunks += 1
        return pb.StreamResponse(artifact_update=update)

    def _flush(self) -> list[pb.StreamResponse]:
        if self.held is None:
            return []
        text, self.held = self.held, None
        out = self._artifact([text_part(text)], append=self.chunks > 0, last=False, metadata={})
        self.sent += text
        return [out]

    def _working(self, data: dict[str, Any]) -> pb.StreamResponse:
        message = agent_message(self.task_id, self.context_id, [data_part(data)])
        update = pb.TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=status(pb.TASK_STATE_WORKING, message),
        )
        return pb.StreamResponse(status_update=update)

    def _completed(self, done: ResponseCompleted) -> list[pb.StreamResponse]:
        if done.approval_requests:  # the turn waits for a person: input-required
            waiting = [(r.approval_request_id, r.name, r.arguments) for r in done.approval_requests]
            message = approval_message(self.task_id, self.context_id, waiting)
            usage = {"tokensUsage": done.usage.as_dict()}
            return [*self._flush(), self._end(pb.TASK_STATE_INPUT_REQUIRED, message, usage)]
        text = done.answer_text
        parts = answer_parts(done.answer, text, done.structured)
        metadata = {"customOutputs": done.custom_outputs} if done.custom_outputs else {}
        held, self.held = self.held, None
        if held is not None and self.sent + held == text:
            chunk = [text_part(held), *parts[1:]]
            last = self._artifact(chunk, append=self.chunks > 0, last=True, metadata=metadata)
        else:  # nothing streamed, or not the answer: the whole answer replaces it
            last = self._artifact(parts, append=False, last=True, metadata=metadata)
        artifact = pb.Artifact(artifact_id=ARTIFACT_ID, name="answer", parts=parts)
        if metadata:
            artifact.metadata.update(metadata)
        usage = {"tokensUsage": done.usage.as_dict()}
        return [last, self._end(pb.TASK_STATE_COMPLETED, None, usage, artifact)]

    def _end(
        self,
        state: int,
        message: pb.Message | None = None,
        metadata: dict[str, Any] | None = None,
        artifact: pb.Artifact | None = None,
    ) -> pb.StreamResponse:
        update = pb.TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status(state, message)
        )
        if metadata:
            update.metadata.update(metadata)
        task = pb.Task(id=self.task_id, context_id=self.context_id, history=[self.user])
        task.status.CopyFrom(update.status)
        if artifact is not None:
            task.artifacts.append(artifact)
        if metadata:
            task.metadata.update(metadata)
        self.final = task
        return pb.StreamResponse(status_update=update)


# ---------------------------------------------------------------- a run record as a Task


def run_task(run: Run, history_length: int | None = None) -> pb.Task:
    """The task a run is: its status, its answer as the artifact, its messages as history."""
    task_id, context_id = str(run.pk), run.thread_id
    state = STATES.get(RunStatus(run.status), pb.TASK_STATE_UNSPECIFIED)
    message = None
    if run.status == RunStatus.FAILED and run.error:
        error = run.error
        message = failure_message(
            task_id, context_id, error.get("code", ""), error.get("message", "")
        )
    if run.status == RunStatus.AWAITING_APPROVAL and run.paused:
        asked = run.paused["turn"]["requests"]  # [id, call id, name, arguments] each
        waiting = [(request_id, name, arguments) for request_id, _, name, arguments in asked]
        message = approval_message(task_id, context_id, waiting)
    task = pb.Task(id=task_id, context_id=context_id)
    task.status.CopyFrom(status(state, message))
    at = run.completed_at or run.started_at
    task.status.timestamp.FromDatetime(at)
    if run.status == RunStatus.COMPLETED:
        task.artifacts.append(_recorded_artifact(run.output))
    history = _history(run, task_id, context_id)
    if history_length is not None:
        history = history[len(history) - history_length :] if history_length else []
    task.history.extend(history)
    metadata: dict[str, Any] = {"protocol": run.protocol}
    if run.tokens_usage:
        metadata["tokensUsage"] = run.tokens_usage
    if run.error:
        metadata["error"] = run.error
    task.metadata.update(metadata)
    return task


def _recorded_artifact(output: Any) -> pb.Artifact:
    custom: dict[str, Any] = {}
    if isinstance(output, dict) and set(output) == {"answer", "customOutputs"}:
        output, custom = output["answer"], output["customOutputs"]
    if isinstance(output, dict):
        parts = answer_parts(output, json.dumps(output, ensure_ascii=False), None)
    else:
        parts = [text_part("" if output is None else str(output))]
    artifact = pb.Artifact(artifact_id=ARTIFACT_ID, name="answer", parts=parts)
    if custom:
        artifact.metadata.update({"customOutputs": custom})
    return artifact


def _history(run: Run, task_id: str, context_id: str) -> list[pb.Message]:
    out = []
    for index, item in enumerate(run.messages or ()):
        role = item.get("role")
        if role == "user":
            parts = (
                [data_part(item["inputs"])]
                if isinstance(item.get("inputs"), dict)
                else [text_part(str(item.get("content") or ""))]
            )
            out.append(
                pb.Message(
                    message_id=f"{task_id}-{index}",
                    task_id=task_id,
                    context_id=context_id,
                    role=pb.ROLE_USER,
                    parts=parts,
                )
            )
        elif role == "assistant" and item.get("content"):
            message = agent_message(task_id, context_id, [text_part(str(item["content"]))])
            message.message_id = f"{task_id}-{index}"
            out.append(message)
    return out


# ---------------------------------------------------------------- on the wire


def result_json(value: pb.Task | pb.StreamResponse, dialect: Dialect) -> dict[str, Any]:
    """A Task or a stream update as the dialect writes a result (token counts and the
    numbers of a structured answer as ints, as the runtime has them)."""
    if dialect is Dialect.V1:
        return whole_numbers(MessageToDict(value))
    if isinstance(value, pb.Task):
        compat: Any = conversions.to_compat_task(value)
    else:
        compat = conversions.to_compat_stream_response(value).result
    return whole_numbers(compat.model_dump(mode="json", by_alias=True, exclude_none=True))


def send_result(task: pb.Task, dialect: Dialect) -> dict[str, Any]:
    """`message/send`'s result: the task (0.3), a SendMessageResponse holding it (1.0)."""
    if dialect is Dialect.V1:
        return {"task": result_json(task, dialect)}
    return result_json(task, dialect)


def response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class SseEncoder:
    """The task's updates as server-sent events, each a JSON-RPC response."""

    def __init__(self, tasks: TaskEncoder, request_id: RequestId, dialect: Dialect) -> None:
        self.tasks, self.request_id, self.dialect = tasks, request_id, dialect

    def frames(self, event: Update) -> list[bytes]:
        return [
            sse(response(self.request_id, result_json(update, self.dialect)))
            for update in self.tasks.updates(event)
        ]


def tasks_page(tasks: list[pb.Task], next_token: str, page_size: int, total: int) -> dict[str, Any]:
    """ListTasks' result, every field the specification requires written even when empty
    (protobuf JSON leaves out an empty list, an empty string and a zero)."""
    page = pb.ListTasksResponse(
        tasks=tasks, next_page_token=next_token, page_size=page_size, total_size=total
    )
    body: dict[str, Any] = whole_numbers(MessageToDict(page))
    body.setdefault("tasks", [])
    body.setdefault("nextPageToken", "")
    body.setdefault("pageSize", page_size)
    body.setdefault("totalSize", total)
    return body
