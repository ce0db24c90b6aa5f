"""The chat completions answer: a `chat.completion` object, or `chat.completion.chunk`s as
server-sent events (the order of chunks: see the package's docstring)."""

from __future__ import annotations

from typing import Any, Literal, assert_never

from pydantic import BaseModel, Field

from agents.llm.base import Usage
from agents.protocols.chat_completions.errors import error_body
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

# Our ToolCall events carry whole arguments; the stream hands them out in pieces this long.
ARGUMENT_FRAGMENT_CHARS = 32
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


# The OpenAI shapes of the answer, for the OpenAPI document: completion_body writes them.
class CompletionMessage(BaseModel):
    role: Literal["assistant"]
    content: str | None
    refusal: str | None = None


class CompletionChoice(BaseModel):
    index: int
    message: CompletionMessage
    logprobs: None = None
    finish_reason: Literal["stop", "length", "tool_calls", "content_filter"]


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int = Field(description="Epoch seconds.")
    model: str = Field(description="The agent that answered: `name@version`.")
    llm_model: str | None = Field(None, description="The language model behind the agent.")
    choices: list[CompletionChoice]
    usage: CompletionUsage
    system_fingerprint: str | None = None
    custom_outputs: dict[str, Any] | None = Field(
        None, description="sourceNodes of a RAG agent, a guardrail's verdict."
    )


def usage_body(usage: Usage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_input_tokens:  # as OpenAI reports a prompt cache hit
        body["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    return body


def completion_id(response_id: str) -> str:
    return "chatcmpl-" + response_id.removeprefix("resp_")


def completion_body(events: list[Event], *, answered_by: str = "") -> dict[str, Any]:
    """The non-streaming answer: the final assistant reply of a completed run.
    `answered_by` (`name@version`) is its `model`; without it, the model that served it."""
    created = events[0]
    done = events[-1]
    assert isinstance(created, ResponseCreated)
    assert isinstance(done, ResponseCompleted)
    body: dict[str, Any] = {
        "id": completion_id(created.response_id),
        "object": "chat.completion",
        "created": created.created_at,
        "model": answered_by or created.model,
        "llm_model": created.model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": done.answer_text,
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage_body(done.usage),
        "system_fingerprint": None,
    }
    if done.custom_outputs:
        body["custom_outputs"] = done.custom_outputs
    return body


def _fragments(text: str) -> list[str]:
    size = ARGUMENT_FRAGMENT_CHARS
    return [text[i : i + size] for i in range(0, len(text), size)]


class ChunkEncoder:
    """Events in, SSE frames out; one encoder per stream.

    `answer_tools` names the agent's structured_output tools: a call of one is held back
    until the next event says whether it was the answer (then its object is the final
    reply's content) or a retry (then the call and its error result are sent as usual).
    """

    def __init__(
        self,
        *,
        include_usage: bool,
        answer_tools: frozenset[str] = frozenset(),
        answered_by: str = "",
    ):
        self.include_usage = include_usage
        self.answered_by = answered_by
        self.answer_tools = answer_tools
        self.head: dict[str, Any] = {}
        self.base_id = ""
        self.messages = 0
        self.message_id = ""
        self.open: Literal["assistant", "tool"] | None = None
        self.calls = 0  # tool calls of the open assistant message
        self.deltas: list[str] = []  # text of the open assistant message
        self.held: list[ToolCall] = []

    # ------------------------------------------------------------ frames

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.message_id,
            **self.head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return sse(chunk | extra)

    def _start(self, role: Literal["assistant", "tool"]) -> None:
        self.messages += 1
        self.message_id = f"{self.base_id}-{self.messages}"
        self.open = role
        self.calls = 0
        self.deltas = []

    def _start_assistant(self, content: str | None) -> bytes:
        self._start("assistant")
        return self._chunk({"role": "assistant", "content": content})

    def _close_calls(self) -> list[bytes]:
        """End the open assistant message's tool-call phase."""
        if self.open == "assistant" and self.calls:
            self.open = None
            return [self._chunk({}, "tool_calls")]
        return []

    # ------------------------------------------------------------ events

    def encode(self, event: Event) -> list[bytes]:
        if isinstance(event, ResponseCreated):
            self.base_id = completion_id(event.response_id)
            self.message_id = self.base_id
            self.head = {
                "object": "chat.completion.chunk",
                "created": event.created_at,
                "model": self.answered_by or event.model,
                "llm_model": event.model,
                "system_fingerprint": None,
            }
            return []
        if isinstance(event, ResponseCompleted):
            return self._completed(event)
        if isinstance(event, ResponseFailed):
            self.held = []
            kind = (
                "invalid_request_error"
                if event.code == FailureCode.INVALID_REQUEST
                else "server_error"
            )
            return [sse(error_body(event.message, kind, event.code)), DONE]
        if isinstance(event, ToolCall) and event.name in self.answer_tools:
            self.held.append(event)
            return []
        frames = self._release_held()
        if isinstance(event, TextDelta):
            frames += self._text(event.text)
        elif isinstance(event, ToolCall):
            frames += self._call(event)
        elif isinstance(event, ToolResult):
            frames += self._close_calls()
            self._start("tool")
            delta = {"role": "tool", "tool_call_id": event.call_id, "content": event.content}
            frames.append(self._chunk(delta))
        else:
            assert_never(event)
        return frames

    def _release_held(self) -> list[bytes]:
        held, self.held = self.held, []
        return [frame for call in held for frame in self._call(call)]

    def _text(self, text: str) -> list[bytes]:
        frames: list[bytes] = []
        if self.open != "assistant" or self.calls:
            frames += self._close_calls()
            frames.append(self._start_assistant(""))
        if text:
            self.deltas.append(text)
            frames.append(self._chunk({"content": text}))
        return frames

    def _call(self, call: ToolCall) -> list[bytes]:
        frames: list[bytes] = []
        if self.open != "assistant":
            frames.append(self._start_assistant(None))
        index = self.calls
        self.calls += 1
        first = {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        frames.append(self._chunk({"tool_calls": [first]}))
        for fragment in _fragments(call.arguments):
            piece = {"index": index, "function": {"arguments": fragment}}
            frames.append(self._chunk({"tool_calls": [piece]}))
        return frames

    def _completed(self, done: ResponseCompleted) -> list[bytes]:
        frames: list[bytes] = []
        if isinstance(done.answer, dict):
            self.held = []  # the held call was the answer: its object is the reply
            frames += self._close_calls()
            frames.append(self._start_assistant(done.answer_text))
        else:
            frames += self._release_held()
            if self.open != "assistant" or self.calls:
                frames += self._close_calls()
                frames.append(self._start_assistant(done.text))
        extra = {"custom_outputs": done.custom_outputs} if done.custom_outputs else {}
        frames.append(self._chunk({}, "stop", **extra))
        self.open = None
        if self.include_usage:
            usage = {"id": self.message_id, **self.head, "choices": [], "usage": None}
            frames.append(sse(usage | {"usage": usage_body(done.usage)}))
        frames.append(DONE)
        return frames
