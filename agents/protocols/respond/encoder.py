"""The agent HTTP contract's answer (AgentResponse, TurnMessage, TokenUsage), built from a
run's events: every message of the turn, with model, provider, usage and metadata."""

from __future__ import annotations

from typing import Any, Literal, assert_never

from pydantic import BaseModel, Field

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
from agents.runtime.transcript import Transcript

# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "AgentContract"


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


# Failures after the run began that are the agent's own, not its transport's: the turn is
# still answered (HTTP 200) with an assistant message that says what went wrong, as the
# contract's "refusal / error-style response". Provider failures and timeouts stay HTTP
# errors (502 / 504), the contract's "hard transport failures".
EXPLAINED_FAILURES = frozenset({FailureCode.MAX_ITERATIONS, FailureCode.STRUCTURED_OUTPUT_INVALID})


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
        elif isinstance(event, TextDelta | ToolCall | ToolResult):
            pass  # the transcript keeps the turn's messages
        else:
            assert_never(event)

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
