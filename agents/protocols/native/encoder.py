"""The native wire format (docs/api.md#invoke, #invoke-stream): a response object or NDJSON."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, RootModel

from agentbuilder.wire import CamelModel
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)

# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "Invoke"


# The answer of `invoke` and `invoke-task` (docs/api.md#invoke), for the OpenAPI document: the
# encoder (response_body below) writes it.
class OutputText(CamelModel):
    type: Literal["output_text"]
    text: str


class FunctionCallItem(CamelModel):
    type: Literal["function_call"]
    status: Literal["completed"]
    call_id: str
    name: str
    arguments: str = Field(description="The call's arguments as a JSON string.")


class MessageItem(CamelModel):
    type: Literal["message"]
    status: Literal["completed"]
    role: Literal["assistant"]
    content: list[OutputText]


class TokenUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ApprovalRequestItem(CamelModel):
    approval_request_id: str
    call_id: str
    name: str
    arguments: str = Field(description="The call's arguments as a JSON string.")


class InvokeResponse(CamelModel):
    """The response object. A tool agent whose answer is a `structured_output` call answers
    with the validated object itself instead."""

    object: Literal["response"]
    id: str
    created_at: int = Field(description="Epoch seconds.")
    model: str
    output: list[Annotated[FunctionCallItem | MessageItem, Field(discriminator="type")]]
    usage: TokenUsage
    custom_outputs: dict[str, Any] | None = Field(
        None,
        description="sourceNodes and ragMode of a RAG agent, a guardrail's verdict and what "
        "it detected.",
    )
    status: Literal["awaiting_approval"] | None = Field(
        None,
        description="Only when the run waits for a person's decision on the calls in "
        "`approvalRequests` (POST /v1/runs/{runId}/approvals resumes it).",
    )
    approval_requests: list[ApprovalRequestItem] | None = None


class StructuredOutput(RootModel[dict[str, Any]]):
    """A tool agent's `structured_output` answer: the object its schema validated, as the
    whole body (docs/api.md#invoke), told from a response object by not being one."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {"properties": {"object": {"const": "response"}}, "required": ["object"]}
        }
    )


class InvokeAnswer(RootModel[InvokeResponse | StructuredOutput]):
    """`invoke`'s answer: the response object, or a structured-output agent's object."""


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class NdjsonEncoder:
    """One JSON object a line; every line carries the response id of the first."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}

    def encode(self, event: Event) -> bytes | None:
        line = self.line(event)
        return None if line is None else _dumps(line)

    def line(self, event: Event) -> dict[str, Any] | None:
        """The event's line as an object (None for an event the stream does not show): what
        `encode` writes, and what a run's event stream (docs/api.md#run-events) adds its
        index to."""
        if isinstance(event, ResponseCreated):
            self.head = {
                "id": event.response_id,
                "model": event.model,
                "object": "response",
                "createdAt": event.created_at,
            }
            return {"type": "response.created", "response": self.head}
        rid = self.head.get("id")
        if isinstance(event, TextDelta):
            return {
                "type": "response.output_text.delta",
                "role": "assistant",
                "delta": event.text,
                "id": rid,
            }
        if isinstance(event, ToolCall):
            return {
                "type": "response.function_call_arguments.done",
                "id": rid,
                "name": event.name,
                "itemId": event.call_id,
                "arguments": event.arguments,
            }
        if isinstance(event, ResponseCompleted):
            response = {**self.head, "usage": event.usage.as_dict()}
            if event.custom_outputs:
                response["customOutputs"] = event.custom_outputs
            if event.approval_requests:  # the turn's end: it waits for a person
                response["status"] = "awaiting_approval"
                response["approvalRequests"] = approval_requests_json(event)
                return {"type": "response.approval_requested", "response": response}
            return {"type": "response.completed", "response": response}
        if isinstance(event, ResponseFailed):
            response = {
                **self.head,
                "usage": event.usage.as_dict(),
                "error": {"code": event.code, "message": event.message},
            }
            return {"type": "response.failed", "response": response}
        if isinstance(event, ToolResult):
            return None  # tool results are not part of the native stream
        assert_never(event)

    def frames(self, event: Event) -> list[bytes]:
        line = self.encode(event)
        return [line] if line is not None else []


def response_body(events: list[Event]) -> dict[str, Any]:
    """The non-streaming answer: the response object, or a structured answer's object."""
    created = events[0]
    assert isinstance(created, ResponseCreated)
    done = events[-1]
    assert isinstance(done, ResponseCompleted)
    if isinstance(done.answer, dict):
        return done.answer
    output: list[dict[str, Any]] = []
    text: list[str] = []
    for event in events:
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCall):
            if text:
                output.append(_message("".join(text)))
                text = []
            output.append(
                {
                    "type": "function_call",
                    "status": "completed",
                    "callId": event.call_id,
                    "name": event.name,
                    "arguments": event.arguments,
                }
            )
    output.append(_message(done.answer_text))
    body: dict[str, Any] = {
        "object": "response",
        "id": created.response_id,
        "createdAt": created.created_at,
        "model": created.model,
        "output": output,
        "usage": done.usage.as_dict(),
    }
    if done.custom_outputs:
        body["customOutputs"] = done.custom_outputs
    if done.approval_requests:
        body["status"] = "awaiting_approval"
        body["approvalRequests"] = approval_requests_json(done)
    return body


def approval_requests_json(done: ResponseCompleted) -> list[dict[str, Any]]:
    """The calls a paused turn waits on (docs/api.md#tool-approvals), as the native answer
    and stream list them."""
    return [
        {
            "approvalRequestId": r.approval_request_id,
            "callId": r.call_id,
            "name": r.name,
            "arguments": r.arguments,
        }
        for r in done.approval_requests
    ]


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
