"""The agent HTTP contract's request (AgentRequest, ChatMessage, ToolCall), and how its
history maps to runtime messages."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from agentbuilder.errors import ErrorItem, Invalid, Loc
from agents.llm.base import Message, ToolCallPart
from agents.webhooks.request import WebhookBody

# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "AgentContract"


class _Lenient(BaseModel):
    # Chat messages travel between OpenAI-compatible stacks that add fields of their own
    # (`id`, `refusal`, `metadata`, the platform's `tool_result`): ignored, not refused.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ToolCallFunction(_Lenient):
    name: str = Field(min_length=1, max_length=200)
    arguments: str = Field(default="{}", description="The arguments: a JSON object as text.")

    @field_validator("arguments")
    @classmethod
    def _json_object(cls, value: str) -> str:
        if not value.strip():
            return "{}"
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be a JSON object as text: {exc.msg}") from None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object as text")
        return value


class ToolCallModel(_Lenient):
    """ToolCall of the contract: OpenAI's shape, plus the platform's optional `tool_result`."""

    id: str = Field(min_length=1, max_length=200)
    type: Literal["function"] = "function"
    function: ToolCallFunction
    tool_result: Any = Field(
        None, description="Filled by the platform on stored transcripts (optional)."
    )


class TextPart(_Lenient):
    type: Literal["text"]
    text: str


class ChatMessage(_Lenient):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    tool_calls: list[ToolCallModel] | None = Field(None, max_length=128)
    tool_call_id: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=200)

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content)


class AgentRequestMetadata(BaseModel):
    """Platform context; keys beyond the two named ones are kept and echoed back."""

    model_config = ConfigDict(extra="allow", frozen=True)

    test_case_id: str | None = None
    turn_index: int | None = Field(None, ge=0)


class AgentRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[ChatMessage] = Field(min_length=1, max_length=1000)
    metadata: AgentRequestMetadata | None = None
    # The platform's, beyond the contract: a background run (docs/api.md#background-runs).
    background: StrictBool = False
    webhook: WebhookBody | None = Field(
        None, description="This run's events also go here (docs/api.md#webhooks)."
    )


def history_messages(request: AgentRequest) -> tuple[Message, ...]:
    """The request's history as runtime messages.

    Tool results are placed right after the assistant message that made their calls, in
    call order, wherever the request put them. A call answered by no tool message but
    carrying the platform's `tool_result` gets that as its result; a call answered by
    neither is dropped (providers refuse a call without a result). A tool message that
    answers no earlier call, or a call id used twice, is a 400.
    """
    calls: dict[str, tuple[int, ToolCallModel]] = {}
    errors = _role_problems(request)
    for index, message in enumerate(request.messages):
        for number, call in enumerate(message.tool_calls or ()):
            if call.id in calls:
                loc = ("body", "messages", index, "tool_calls", number, "id")
                errors.append(ErrorItem(loc, f"tool call id '{call.id}' is used twice"))
            calls.setdefault(call.id, (index, call))
    results: dict[str, ChatMessage] = {}
    for index, message in enumerate(request.messages):
        if message.role != "tool":
            continue
        call_id = message.tool_call_id or ""
        at: Loc = ("body", "messages", index, "tool_call_id")
        if call_id not in calls or calls[call_id][0] >= index:
            errors.append(ErrorItem(at, f"'{call_id}' answers no tool call of an earlier message"))
        elif call_id in results:
            errors.append(ErrorItem(at, f"tool call '{call_id}' is answered twice"))
        else:
            results[call_id] = message
    if errors:
        raise Invalid(errors)

    history: list[Message] = []
    for message in request.messages:
        if message.role == "tool":
            continue  # placed after its call below
        if message.role != "assistant":
            # As on the native routes: a request's system messages are context the caller
            # wrote, not the agent's system prompt.
            history.append(Message("user", message.text()))
            continue
        answered: list[tuple[ToolCallPart, Message]] = []
        for call in message.tool_calls or ():
            result = _result(call, results.get(call.id))
            if result is not None:
                part = ToolCallPart(call.id, call.function.name, call.function.arguments)
                answered.append((part, result))
        history.append(Message("assistant", message.text(), tuple(p for p, _ in answered)))
        history.extend(result for _, result in answered)
    return tuple(history)


def _role_problems(request: AgentRequest) -> list[ErrorItem]:
    errors = []
    for index, message in enumerate(request.messages):
        loc = ("body", "messages", index)
        if message.tool_calls and message.role != "assistant":
            errors.append(
                ErrorItem((*loc, "tool_calls"), "only assistant messages carry tool_calls")
            )
        if message.role == "tool" and not message.tool_call_id:
            msg = "a tool message needs the id of the call it answers"
            errors.append(ErrorItem((*loc, "tool_call_id"), msg))
        if message.tool_call_id and message.role != "tool":
            errors.append(
                ErrorItem((*loc, "tool_call_id"), "only tool messages carry tool_call_id")
            )
    return errors


def _result(call: ToolCallModel, message: ChatMessage | None) -> Message | None:
    if message is not None:
        text = message.text()
    elif call.tool_result is not None:
        value = call.tool_result
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    else:
        return None
    name = (message.name if message is not None else None) or call.function.name
    return Message("tool", text, tool_call_id=call.id, name=name)
