"""The evaluation platform's agent HTTP contract (seeds/agent-http-contract.txt): `respond`.

In: an OpenAI-style chat history and optional metadata. Out: every message of the turn in
order (assistant messages carrying `tool_calls`, one `role: tool` message per executed
call, the final assistant reply), with `model`, `provider`, `usage` and `metadata`.

The models mirror the contract's tables (AgentRequest, ChatMessage, ToolCall, TokenUsage,
AgentResponse) with the contract's own snake_case names. `history_messages` maps a request
onto the runtime's messages; `TurnEncoder` turns a run's events into the response.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentbuilder.errors import ErrorItem, Invalid, Loc
from agents.llm.base import Message, ToolCallPart
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
)
from agents.runtime.transcript import Transcript

# ---------------------------------------------------------------- the contract's models


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


class TokenUsage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class FunctionOut(BaseModel):
    name: str
    arguments: str = Field(description="A JSON object as text.")


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionOut


class TurnMessage(BaseModel):
    """A ChatMessage of the answer: only the fields its role uses are present."""

    role: Literal["assistant", "tool"]
    content: str | None = Field(None, description="null on an assistant message of only calls")
    tool_calls: list[ToolCallOut] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class AgentResponse(BaseModel):
    messages: list[TurnMessage] = Field(
        description="ChatMessage items of this turn, in the order they happened."
    )
    model: str | None = None
    provider: str | None = None
    usage: TokenUsage | None = None
    metadata: dict[str, Any] | None = None


# ---------------------------------------------------------------- request ▸ runtime


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


# ---------------------------------------------------------------- events ▸ response


# Failures after the run began that are the agent's own, not its transport's: the turn is
# still answered (HTTP 200) with an assistant message that says what went wrong, as the
# contract's "refusal / error-style response". Provider failures and timeouts stay HTTP
# errors (502 / 504), the contract's "hard transport failures".
EXPLAINED_FAILURES = frozenset({"max_iterations", "structured_output_invalid"})


class TurnEncoder:
    """Follows a run's events and builds the contract's messages of the turn."""

    def __init__(self) -> None:
        self.transcript = Transcript()
        self.model: str | None = None
        self.response_id: str | None = None
        self.done: ResponseCompleted | ResponseFailed | None = None

    def encode(self, event: Event) -> None:
        self.transcript.observe(event)
        if isinstance(event, ResponseCreated):
            self.model = event.model
            self.response_id = event.response_id
        elif isinstance(event, ResponseCompleted):
            self.done = event
            self._final(self._answer(event))
        elif isinstance(event, ResponseFailed):
            self.done = event
            if event.code in EXPLAINED_FAILURES:
                self._final(f"I could not finish this request ({event.code}): {event.message}")

    @property
    def failed(self) -> ResponseFailed | None:
        """The failure the contract answers with an HTTP error, if the run ended so."""
        if isinstance(self.done, ResponseFailed) and self.done.code not in EXPLAINED_FAILURES:
            return self.done
        return None

    def _answer(self, done: ResponseCompleted) -> str:
        # An object answer's structured_output call is the answer's form, not a tool that
        # ran: the object is the reply (the call, which has no result, is left out below).
        return done.answer_text

    def _final(self, text: str) -> None:
        self.transcript.take_text()  # the final message says it all
        self._drop_unanswered_calls()
        self.transcript.messages.append({"role": "assistant", "content": text})

    def _drop_unanswered_calls(self) -> None:
        """The contract's turn ends with no call pending: a call without a result (a
        structured answer's, or one a guardrail stopped beside another) is left out."""
        answered = {m["tool_call_id"] for m in self.transcript.messages if m["role"] == "tool"}
        kept: list[dict[str, Any]] = []
        for message in self.transcript.messages:
            calls = message.get("tool_calls")
            if calls is not None:
                calls = [c for c in calls if c["id"] in answered]
                if calls:
                    message["tool_calls"] = calls
                else:
                    del message["tool_calls"]
                    if not message["content"]:
                        continue
            kept.append(message)
        self.transcript.messages = kept

    def response(
        self,
        *,
        provider: str | None,
        run_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> AgentResponse:
        """The answer; `metadata` (the request's) is echoed, with the run's ids added."""
        assert self.done is not None, "the run has not ended"
        usage = self.done.usage
        extra: dict[str, Any] = {"run_id": run_id, "response_id": self.response_id}
        if isinstance(self.done, ResponseCompleted) and self.done.custom_outputs:
            extra["custom_outputs"] = self.done.custom_outputs
        if isinstance(self.done, ResponseFailed):
            extra["error"] = {"code": self.done.code, "message": self.done.message}
        return AgentResponse(
            messages=[
                TurnMessage.model_validate(_openai_shape(m)) for m in self.transcript.messages
            ],
            model=self.model,
            provider=provider,
            usage=TokenUsage(
                prompt_tokens=usage.input_tokens,
                completion_tokens=usage.output_tokens,
                total_tokens=usage.total_tokens,
            ),
            metadata={**(metadata or {}), **extra},
        )


def _openai_shape(message: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's form: an assistant message that only calls tools has `content: null`."""
    if message.get("tool_calls") and not message["content"]:
        return {**message, "content": None}
    return message
