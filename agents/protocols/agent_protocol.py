"""The agent API protocol (seeds/agent-api-protocol.txt): its types, and the encoder of a
run's events into its stream of typed objects.

A response goes `created` ▸ `in_progress` ▸ `completed` (or `failed`). In between, each
message of the turn goes `created` ▸ its content (text as `delta: true` segments, then the
whole part with `status: completed`) ▸ `completed`. Tool calls are `function_call`
messages and their results `function_call_output` messages, each carrying one data part
(`FunctionCall` / `FunctionCallOutput`). Every streamed object carries a
`sequence_number`, 0, 1, 2, … without gaps.

Where the document is silent (decisions, see also SPEC section 4):
- `sequence_number` is an integer: the document types it `str` on BaseResponse but asks
  for it to order events; the base `Event` it inherits from is not shown.
- Every message the agent produces has role `assistant` (the document's roles have no
  `tool`); the tool's side is told apart by the message `type`.
- One `function_call` message per call and one `function_call_output` message per result,
  in the order the runtime reports them (the calls of one step, then their results).
- A tool that failed still gives a completed `function_call_output` message (the run goes
  on); the message's `code` is `tool_error` and its `message` the result text.
- A structured answer (a `structured_output` tool) is an assistant message with one data
  part holding the object; custom outputs (RAG source nodes, a guardrail's verdict) are a
  data part after the answer's text, in the final assistant message.
- A message cut short by a failure ends with `status: failed` and the run's `code` and
  `message`; the response then fails with `error {code, message}`.
- The response id is the run's (`resp_…`), message ids are `msg_<uuid4>`.
"""

from __future__ import annotations

import itertools
import json
import time
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.events import (
    Event as RuntimeEvent,
)
from agents.runtime.events import (
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)

# ---------------------------------------------------------------- 1. enums


class Role(StrEnum):
    ASSISTANT = "assistant"
    USER = "user"
    SYSTEM = "system"


class MessageType(StrEnum):
    MESSAGE = "message"
    FUNCTION_CALL = "function_call"
    FUNCTION_CALL_OUTPUT = "function_call_output"
    PLUGIN_CALL = "plugin_call"
    PLUGIN_CALL_OUTPUT = "plugin_call_output"
    COMPONENT_CALL = "component_call"
    COMPONENT_CALL_OUTPUT = "component_call_output"
    MCP_LIST_TOOLS = "mcp_list_tools"
    MCP_APPROVAL_REQUEST = "mcp_approval_request"
    MCP_TOOL_CALL = "mcp_call"
    MCP_APPROVAL_RESPONSE = "mcp_approval_response"
    HEARTBEAT = "heartbeat"
    ERROR = "error"


class RunStatus(StrEnum):
    Created = "created"
    InProgress = "in_progress"
    Completed = "completed"
    Canceled = "canceled"
    Failed = "failed"
    Rejected = "rejected"
    Unknown = "unknown"


class ContentType(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    DATA = "data"


class _Model(BaseModel):
    # Unknown keys are refused (SPEC section 2), as on every other route.
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- 2. tools, 7. error


class Error(_Model):
    code: str
    message: str


class FunctionParameters(_Model):
    type: str
    properties: dict[str, Any]
    required: list[str] | None


class FunctionTool(_Model):
    name: str
    description: str
    parameters: FunctionParameters | dict[str, Any]


class Tool(_Model):
    type: str | None = None
    function: FunctionTool | None = None


class FunctionCall(_Model):
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class FunctionCallOutput(_Model):
    call_id: str
    output: str


# ---------------------------------------------------------------- 3. content, 4. message


class Event(_Model):
    sequence_number: int | None = None
    object: str
    status: RunStatus | None = None
    error: Error | None = None


class Content(Event):
    type: str
    object: Literal["content"] = "content"
    index: int | None = None
    delta: bool | None = False
    msg_id: str | None = None


class ImageContent(Content):
    type: Literal["image"] = "image"
    image_url: str | None = None


class TextContent(Content):
    type: Literal["text"] = "text"
    text: str | None = None


class DataContent(Content):
    type: Literal["data"] = "data"
    data: dict[str, Any] | None = None


AnyContent = Annotated[TextContent | ImageContent | DataContent, Field(discriminator="type")]


def _message_id() -> str:
    return f"msg_{uuid4()}"


class Message(Event):
    id: str = Field(default_factory=_message_id)
    object: Literal["message"] = "message"
    type: MessageType = MessageType.MESSAGE
    status: RunStatus = RunStatus.Created
    role: Role | None = None
    content: list[AnyContent] | None = None
    code: str | None = None
    message: str | None = None


# ---------------------------------------------------------------- 5. requests


class BaseRequest(_Model):
    input: list[Message] = Field(min_length=1, max_length=1000)
    stream: bool = True


class AgentRequest(BaseRequest):
    """The generation parameters and `tools` are accepted as the document defines them and
    left to the agent version's config, which owns its model and tools."""

    model: str | None = None
    top_p: float | None = None
    temperature: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    max_tokens: int | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(default=1, ge=1, le=5)
    seed: int | None = None
    tools: list[Tool | dict[str, Any]] | None = None
    session_id: str | None = Field(None, min_length=1, max_length=100)
    response_id: str | None = None


# ---------------------------------------------------------------- 6. responses


def _now() -> int:
    return int(time.time())


class BaseResponse(Event):
    id: str = Field(default_factory=lambda: f"response_{uuid4()}")
    object: Literal["response"] = "response"
    status: RunStatus = RunStatus.Created
    created_at: int = Field(default_factory=_now)
    completed_at: int | None = None
    output: list[Message] | None = None
    usage: dict[str, Any] | None = None


class AgentResponse(BaseResponse):
    session_id: str | None = None


def dump(model: BaseModel) -> dict[str, Any]:
    """An object on the wire: what is not set is left out (the document's examples)."""
    return model.model_dump(mode="json", exclude_none=True)


def error_response(code: str, message: str, session_id: str | None = None) -> dict[str, Any]:
    """A response that failed before it could run: the document's error style."""
    now = _now()
    response = AgentResponse(
        status=RunStatus.Failed,
        created_at=now,
        completed_at=now,
        error=Error(code=code, message=message),
        session_id=session_id,
    )
    return dump(response)


# ---------------------------------------------------------------- the encoder


class ProcessEncoder:
    """Runtime events in, the protocol's objects out (as JSON-ready dicts, numbered).

    `encode` answers the objects one event makes; after the last event, `response` is
    the whole response, the non-streaming answer.
    """

    def __init__(self, session_id: str | None = None) -> None:
        self.response = AgentResponse(session_id=session_id)
        self.output: list[Message] = []
        self.answer: Message | None = None  # the assistant text message being streamed
        self._numbers = itertools.count()

    def encode(self, event: RuntimeEvent) -> list[dict[str, Any]]:
        if isinstance(event, ResponseCreated):
            self.response.id = event.response_id
            self.response.created_at = event.created_at
            created = self._emit(self.response)
            self.response.status = RunStatus.InProgress
            return [created, self._emit(self.response)]
        if isinstance(event, TextDelta):
            return self._delta(event.text)
        if isinstance(event, ToolCall):
            call = FunctionCall(call_id=event.call_id, name=event.name, arguments=event.arguments)
            return [
                *self._close_answer(),
                *self._whole(MessageType.FUNCTION_CALL, [DataContent(data=call.model_dump())]),
            ]
        if isinstance(event, ToolResult):
            result = FunctionCallOutput(call_id=event.call_id, output=event.content)
            part = DataContent(data=result.model_dump())
            if event.is_error:
                return self._whole(
                    MessageType.FUNCTION_CALL_OUTPUT,
                    [part],
                    code="tool_error",
                    message=event.content,
                )
            return self._whole(MessageType.FUNCTION_CALL_OUTPUT, [part])
        if isinstance(event, ResponseCompleted):
            return [*self._answer(event), *self._finish(event)]
        assert isinstance(event, ResponseFailed)
        return [*self._fail_answer(event), *self._finish(event)]

    # -- messages

    def _emit(self, model: Event) -> dict[str, Any]:
        return {"sequence_number": next(self._numbers), **dump(model)}

    def _open(self, kind: MessageType) -> tuple[Message, dict[str, Any]]:
        message = Message(type=kind, role=Role.ASSISTANT, content=[])
        self.output.append(message)
        created = self._emit(message.model_copy(update={"content": None}))
        return message, created

    def _add(self, message: Message, part: TextContent | DataContent) -> dict[str, Any]:
        """A whole part joins the message (the document's `add_content`)."""
        assert message.content is not None
        part.index = len(message.content)
        part.msg_id = message.id
        part.delta = False
        part.status = RunStatus.Completed
        message.content.append(part)
        return self._emit(part)

    def _completed(self, message: Message) -> dict[str, Any]:
        message.status = RunStatus.Completed
        return self._emit(message)

    def _whole(
        self, kind: MessageType, parts: list[TextContent | DataContent], **error: str
    ) -> list[dict[str, Any]]:
        message, created = self._open(kind)
        if error:
            message.code, message.message = error["code"], error["message"]
        added = [self._add(message, part) for part in parts]
        return [created, *added, self._completed(message)]

    def _delta(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        objects = []
        if self.answer is None:
            self.answer, created = self._open(MessageType.MESSAGE)
            objects.append(created)
            part = TextContent(text="", index=0, msg_id=self.answer.id, status=RunStatus.InProgress)
            assert self.answer.content is not None
            self.answer.content.append(part)
        part = self._text_part(self.answer)
        part.text = (part.text or "") + text
        segment = TextContent(
            text=text, index=0, delta=True, msg_id=self.answer.id, status=RunStatus.InProgress
        )
        objects.append(self._emit(segment))
        return objects

    @staticmethod
    def _text_part(message: Message) -> TextContent:
        assert message.content is not None
        part = message.content[0]
        assert isinstance(part, TextContent)
        return part

    def _close_answer(self, extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The streamed text is complete (the document's `content_completed`)."""
        message, self.answer = self.answer, None
        if message is None:
            return []
        part = self._text_part(message)
        part.delta = False
        part.status = RunStatus.Completed
        objects = [self._emit(part)]
        if extra:
            objects.append(self._add(message, DataContent(data=extra)))
        return [*objects, self._completed(message)]

    def _answer(self, done: ResponseCompleted) -> list[dict[str, Any]]:
        """The final assistant message: the streamed text, or the structured object."""
        extra = done.custom_outputs or None
        if done.structured is not None:
            parts: list[TextContent | DataContent] = [DataContent(data=done.structured)]
            if extra:
                parts.append(DataContent(data=extra))
            return [*self._close_answer(), *self._whole(MessageType.MESSAGE, parts)]
        if self.answer is None and done.text:
            # An answer that was not streamed (no flow does so today): one segment.
            return [*self._delta(done.text), *self._close_answer(extra)]
        if self.answer is None:
            parts = [TextContent(text=done.text)]
            if extra:
                parts.append(DataContent(data=extra))
            return self._whole(MessageType.MESSAGE, parts)
        return self._close_answer(extra)

    def _fail_answer(self, failed: ResponseFailed) -> list[dict[str, Any]]:
        message, self.answer = self.answer, None
        if message is None:
            return []
        self._text_part(message).status = RunStatus.Failed
        message.status = RunStatus.Failed
        message.code, message.message = failed.code, failed.message
        return [self._emit(message)]

    # -- the response

    def _finish(self, event: ResponseCompleted | ResponseFailed) -> list[dict[str, Any]]:
        response = self.response
        response.completed_at = _now()
        response.usage = event.usage.as_dict()
        response.output = self.output
        if isinstance(event, ResponseFailed):
            response.status = RunStatus.Failed
            response.error = Error(code=event.code, message=event.message)
        else:
            response.status = RunStatus.Completed
        return [self._emit(response)]

    def body(self) -> dict[str, Any]:
        """The whole response, as the non-streaming answer (no sequence number)."""
        return dump(self.response)


def whole_answer(events: list[RuntimeEvent]) -> list[RuntimeEvent]:
    """The events of a non-streaming answer. When a guardrail blocked the output, the
    answer is its message alone (SPEC section 4), not the text released before it."""
    done = events[-1]
    if not isinstance(done, ResponseCompleted) or done.intervention is None:
        return events
    last_tool = max(
        (i for i, e in enumerate(events) if isinstance(e, ToolCall | ToolResult)), default=-1
    )
    return [e for i, e in enumerate(events) if i <= last_tool or not isinstance(e, TextDelta)]


def sse(obj: dict[str, Any]) -> bytes:
    """One server-sent event carrying one object."""
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
