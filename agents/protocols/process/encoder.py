"""The process protocol's encoder: runtime events in, the protocol's objects out, as
server-sent events or one response object."""

from __future__ import annotations

import itertools
from typing import Any, assert_never

from agents.protocols.process.models import (
    AgentResponse,
    DataContent,
    Error,
    Event,
    FunctionCall,
    FunctionCallOutput,
    Message,
    MessageType,
    Role,
    RunStatus,
    TextContent,
    dump,
    epoch_now,
)
from agents.protocols.sse import sse
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
            if event.approval_requests:  # the turn waits: what for, then the response
                return [*self._close_answer(), *self._approvals(event), *self._finish(event)]
            return [*self._answer(event), *self._finish(event)]
        if isinstance(event, ResponseFailed):
            return [*self._fail_answer(event), *self._finish(event)]
        assert_never(event)

    def frames(self, event: RuntimeEvent) -> list[bytes]:
        """The emitted of one event as server-sent events, in one chunk."""
        chunk = b"".join(sse(obj) for obj in self.encode(event))
        return [chunk] if chunk else []

    # -- messages

    def _emit(self, model: Event) -> dict[str, Any]:
        return {"sequence_number": next(self._numbers), **dump(model)}

    def _open(self, kind: MessageType, message_id: str = "") -> tuple[Message, dict[str, Any]]:
        message = Message(type=kind, role=Role.ASSISTANT, content=[])
        if message_id:
            message.id = message_id
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
        self,
        kind: MessageType,
        parts: list[TextContent | DataContent],
        message_id: str = "",
        **error: str,
    ) -> list[dict[str, Any]]:
        message, created = self._open(kind, message_id)
        if error:
            message.code, message.message = error["code"], error["message"]
        added = [self._add(message, part) for part in parts]
        return [created, *added, self._completed(message)]

    def _delta(self, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        emitted = []
        if self.answer is None:
            self.answer, created = self._open(MessageType.MESSAGE)
            emitted.append(created)
            part = TextContent(text="", index=0, msg_id=self.answer.id, status=RunStatus.InProgress)
            assert self.answer.content is not None
            self.answer.content.append(part)
        part = self._text_part(self.answer)
        part.text = (part.text or "") + text
        segment = TextContent(
            text=text, index=0, delta=True, msg_id=self.answer.id, status=RunStatus.InProgress
        )
        emitted.append(self._emit(segment))
        return emitted

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
        emitted = [self._emit(part)]
        if extra:
            emitted.append(self._add(message, DataContent(data=extra)))
        return [*emitted, self._completed(message)]

    def _answer(self, done: ResponseCompleted) -> list[dict[str, Any]]:
        """The final assistant message: the streamed text, or the structured object."""
        extra = dict(done.custom_outputs) or None
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

    def _approvals(self, done: ResponseCompleted) -> list[dict[str, Any]]:
        """One `mcp_approval_request` message per call that waits (docs/api.md#process):
        an `mcp_approval_response` naming its id decides it."""
        emitted: list[dict[str, Any]] = []
        for request in done.approval_requests:
            asked = approval_request_data(
                request.approval_request_id, request.name, request.arguments, request.call_id
            )
            # Its id is the request's, as OpenAI's Responses API names the same item: the
            # answer may quote either.
            emitted += self._whole(
                MessageType.MCP_APPROVAL_REQUEST,
                [DataContent(data=asked)],
                message_id=request.approval_request_id,
            )
        return emitted

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
        response.completed_at = epoch_now()
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
    answer is its message alone (docs/api.md#guardrails), not the text released before it."""
    done = events[-1]
    if not isinstance(done, ResponseCompleted) or done.intervention is None:
        return events
    last_tool = max(
        (i for i, e in enumerate(events) if isinstance(e, ToolCall | ToolResult)), default=-1
    )
    return [e for i, e in enumerate(events) if i <= last_tool or not isinstance(e, TextDelta)]


def approval_request_data(
    approval_request_id: str, name: str, arguments: str, call_id: str = ""
) -> dict[str, Any]:
    """The data part of an `mcp_approval_request` message."""
    data = {"approval_request_id": approval_request_id, "name": name, "arguments": arguments}
    return {**data, "call_id": call_id} if call_id else data
