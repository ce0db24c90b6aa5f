"""The answer of `/v1/openai`: one assistant message per completion, whole or streamed.

`MessageEncoder` follows a run's events and both streams the message and keeps it, so the
streamed answer and the whole one (`completion_body`, the same encoder run to the end)
are the same message by construction. What goes into the message (the package's
docstring says why):

- text: every text delta of the turn, as `content`; a new model step's text after server
  tool activity is set off from what came before by a blank line. A turn whose final step
  streamed no text (a forced call) ends with the answer's text. Agents with a
  structured_output tool answer with the object's JSON alone: their text is held and
  the answer (the object, or the guardrail message that replaced it) is the content.
- client tool calls: `tool_calls`, with `finish_reason: "tool_calls"`.
- server tool activity: never in the message. Each call and result is one chunk with an
  empty `delta` and an `agentbuilder` object, `{"event": "tool_call", "name",
  "arguments", "id"}` or `{"event": "tool_result", "name", "result", "id"}`; the whole
  answer lists them in order under `agentbuilder.events`.
"""

from __future__ import annotations

from typing import Any, Literal, assert_never

from pydantic import BaseModel, Field

from agents.protocols.chat_completions.encoder import (
    DONE,
    ChatCompletion,
    CompletionChoice,
    CompletionMessage,
    completion_id,
    usage_body,
)
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

STEP_SEPARATOR = "\n\n"  # between the texts of model steps with tool activity between them


# The answer's shapes for the OpenAI document, past the seed's: completion_body writes them.
class FunctionCallOut(BaseModel):
    name: str
    arguments: str = Field(description="A JSON object as text.")


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"]
    function: FunctionCallOut


class OpenAIMessage(CompletionMessage):
    tool_calls: list[ToolCallOut] | None = Field(
        None, description="Calls of the client's tools only; the agent's own run on the server."
    )


class OpenAIChoice(CompletionChoice):
    message: OpenAIMessage


class Activity(BaseModel):
    event: Literal["tool_call", "tool_result"]
    name: str
    id: str
    arguments: str | None = Field(None, description="tool_call: a JSON object as text.")
    result: str | None = Field(None, description="tool_result: what the tool answered.")


class Extension(BaseModel):
    events: list[Activity]


class OpenAICompletion(ChatCompletion):
    choices: list[OpenAIChoice]  # type: ignore[assignment]
    agentbuilder: Extension | None = Field(
        None, description="The agent's own tool calls and results, in order (server side)."
    )


class MessageEncoder:
    """Events in, SSE frames out, one encoder per completion; `message` is what was sent.

    `client_tools` names the request's tools (their calls are the message's `tool_calls`);
    `answer_tools` the agent's structured_output tools (a call of one is the answer, or a
    retry the model is told about: held until the next event says which).
    """

    def __init__(
        self,
        *,
        include_usage: bool = False,
        client_tools: frozenset[str] = frozenset(),
        answer_tools: frozenset[str] = frozenset(),
        answered_by: str = "",
    ):
        self.include_usage = include_usage
        self.client_tools = client_tools
        self.answer_tools = answer_tools
        self.answered_by = answered_by
        self.head: dict[str, Any] = {}
        self.created: ResponseCreated | None = None
        self.content: list[str] = []
        self.step_text = False  # text sent since the last server tool activity
        self.tool_calls: list[dict[str, Any]] = []
        self.activity: list[dict[str, Any]] = []  # the agentbuilder objects sent
        self.held: list[ToolCall] = []  # structured_output calls, until the next event
        self.finish: str | None = None
        self.done: ResponseCompleted | None = None
        self.failed: ResponseFailed | None = None

    # ------------------------------------------------------------ frames

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk: dict[str, Any] = {
            **self.head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return sse(chunk | extra)

    def _text(self, text: str) -> list[bytes]:
        if not text:
            return []
        if self.content and not self.step_text:
            text = STEP_SEPARATOR + text
        self.step_text = True
        self.content.append(text)
        return [self._chunk({"content": text})]

    def _activity(self, extension: dict[str, Any]) -> bytes:
        # An empty delta: a standard client adds nothing to the message, and ignores the key.
        self.step_text = False
        self.activity.append(extension)
        return self._chunk({}, agentbuilder=extension)

    def _server_call(self, call: ToolCall) -> bytes:
        extension = {
            "event": "tool_call",
            "name": call.name,
            "arguments": call.arguments,
            "id": call.call_id,
        }
        return self._activity(extension)

    # ------------------------------------------------------------ events

    @property
    def holds_text(self) -> bool:
        return bool(self.answer_tools)

    def encode(self, event: Event) -> list[bytes]:
        if isinstance(event, ResponseCreated):
            self.created = event
            self.head = {
                "id": completion_id(event.response_id),
                "object": "chat.completion.chunk",
                "created": event.created_at,
                "model": self.answered_by or event.model,
                "llm_model": event.model,
                "system_fingerprint": None,
            }
            return [self._chunk({"role": "assistant", "content": ""})]
        if isinstance(event, ResponseCompleted):
            return self._completed(event)
        if isinstance(event, ResponseFailed):
            self.held = []
            self.failed = event
            kind = (
                "invalid_request_error"
                if event.code == FailureCode.INVALID_REQUEST
                else "server_error"
            )
            return [sse(error_body(event.message, kind, event.code)), DONE]
        if isinstance(event, ToolCall) and event.name in self.client_tools:
            return []  # the message's tool_calls, sent when the turn ends waiting for them
        if isinstance(event, ToolCall) and event.name in self.answer_tools:
            self.held.append(event)
            return []
        frames = [self._server_call(call) for call in self._release()]
        if isinstance(event, TextDelta):
            frames += [] if self.holds_text else self._text(event.text)
        elif isinstance(event, ToolCall):
            frames.append(self._server_call(event))
        elif isinstance(event, ToolResult):
            extension = {
                "event": "tool_result",
                "name": event.name,
                "result": event.content,
                "id": event.call_id,
            }
            frames.append(self._activity(extension))
        else:
            assert_never(event)
        return frames

    def _release(self) -> list[ToolCall]:
        held, self.held = self.held, []
        return held

    def _completed(self, done: ResponseCompleted) -> list[bytes]:
        self.done = done
        frames: list[bytes] = []
        if isinstance(done.answer, dict):
            self.held = []  # the held call was the answer: its object is the content
        else:
            frames += [self._server_call(call) for call in self._release()]
        if self.holds_text or not self.step_text:
            frames += self._text(done.answer_text)
        calls = [c for c in done.client_calls if c.name in self.client_tools]
        for index, call in enumerate(calls):
            tool_call = {
                "index": index,
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            self.tool_calls.append(tool_call)
            frames.append(self._chunk({"tool_calls": [tool_call]}))
        self.finish = "tool_calls" if calls else "stop"
        extra = {"custom_outputs": done.custom_outputs} if done.custom_outputs else {}
        frames.append(self._chunk({}, self.finish, **extra))
        if self.include_usage:
            usage = {**self.head, "choices": [], "usage": usage_body(done.usage)}
            frames.append(sse(usage))
        frames.append(DONE)
        return frames

    # ------------------------------------------------------------ the whole answer

    def message(self) -> dict[str, Any]:
        """The assistant message the frames so far carried, as a completion's choice has it."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) if self.content or not self.tool_calls else None,
            "refusal": None,
        }
        if self.tool_calls:
            message["tool_calls"] = [
                {k: v for k, v in call.items() if k != "index"} for call in self.tool_calls
            ]
        return message

    def body(self) -> dict[str, Any]:
        """The `chat.completion` of a completed run, after its last event."""
        assert self.created is not None
        assert self.done is not None
        body: dict[str, Any] = {
            "id": self.head["id"],
            "object": "chat.completion",
            "created": self.created.created_at,
            "model": self.head["model"],
            "llm_model": self.created.model,
            "choices": [
                {
                    "index": 0,
                    "message": self.message(),
                    "logprobs": None,
                    "finish_reason": self.finish,
                }
            ],
            "usage": usage_body(self.done.usage),
            "system_fingerprint": None,
        }
        if self.done.custom_outputs:
            body["custom_outputs"] = self.done.custom_outputs
        if self.activity:
            body["agentbuilder"] = {"events": self.activity}
        return body


def completion_body(
    events: list[Event],
    *,
    client_tools: frozenset[str] = frozenset(),
    answer_tools: frozenset[str] = frozenset(),
    answered_by: str = "",
) -> dict[str, Any]:
    """The non-streaming answer of a completed run: the message its stream would carry."""
    encoder = MessageEncoder(
        client_tools=client_tools, answer_tools=answer_tools, answered_by=answered_by
    )
    for event in events:
        encoder.encode(event)
    return encoder.body()
