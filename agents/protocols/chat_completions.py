"""OpenAI chat completions over the runtime's events (agent-chat-completions-api.txt).

The request is OpenAI's body plus the agent endpoint's `iteration_limit` and `mcp_servers`.
The answer is a `chat.completion` object, or with `stream: true` server-sent events of
`chat.completion.chunk`s in which every message of the turn has a chunk id of its own:

    assistant  role chunk, content deltas, tool calls (index, id, function.name first, then
               function.arguments fragments), finish_reason "tool_calls"
    tool       one chunk per result: role "tool", tool_call_id, content
    assistant  role chunk, content deltas, finish_reason "stop"
    usage      choices [], only with stream_options.include_usage
    data: [DONE]

A run that fails after the stream began ends with OpenAI's mid-stream error event
`data: {"error": {...}}`, then `data: [DONE]`.

What the agent's version decides, the request cannot change: the model, the system prompt,
the inference settings and the tools. `temperature`, `top_p`, `max_tokens`, `stop`, `seed`,
`response_format`, `tool_choice` and other sampling options are accepted and ignored; a
request that brings its own `tools`, or asks for more than one choice (`n`), is refused.
`model` names the agent on `POST /v1/chat/completions` and is ignored on the per-agent route.

`model` in the answer names the agent and version that answered (`calculator@3`), as the
request named it; `llm_model` is the model that served it (the offline model says so).

Two extensions: a final answer with custom outputs (RAG sources, a guardrail's block) carries
them as `custom_outputs` on the completion object and on the stream's "stop" chunk.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentbuilder.errors import ErrorItem, Invalid
from agents.llm.base import Attachment, Message, ToolCallPart, Usage
from agents.protocols.attachments import from_url
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)

ITERATION_LIMIT_DEFAULT = 5
ITERATION_LIMIT_MAX = 20
# Our ToolCall events carry whole arguments; the stream hands them out in pieces this long.
ARGUMENT_FRAGMENT_CHARS = 32
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"

# ---------------------------------------------------------------- the request


class _Lenient(BaseModel):
    # Clients send messages back as the SDK returned them (refusal, annotations, audio …)
    # and newer SDKs add parameters: unknown keys are ignored, not refused.
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextPart(_Lenient):
    type: Literal["text"]
    text: str


class RefusalPart(_Lenient):
    type: Literal["refusal"]
    refusal: str


class ImageUrl(_Lenient):
    url: str = Field(description="A base64 `data:` URL; the server does not fetch URLs.")
    detail: str | None = None


class ImageUrlPart(_Lenient):
    type: Literal["image_url"]
    image_url: ImageUrl


class FileData(_Lenient):
    file_data: str = Field(description="A base64 `data:` URL.")
    filename: str | None = Field(None, max_length=200)


class FilePart(_Lenient):
    type: Literal["file"]
    file: FileData


Content = (
    str
    | list[Annotated[TextPart | RefusalPart | ImageUrlPart | FilePart, Field(discriminator="type")]]
)


class FunctionCall(_Lenient):
    name: str = Field(min_length=1, max_length=200)
    arguments: str = ""


class ToolCallIn(_Lenient):
    id: str = Field(min_length=1, max_length=200)
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Content | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = Field(None, max_length=128)
    tool_call_id: str | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    def attachments(self, at: tuple[str | int, ...]) -> tuple[Attachment, ...]:
        """The message's images and documents; raises Invalid naming a malformed part."""
        if not isinstance(self.content, list):
            return ()
        found = []
        for j, part in enumerate(self.content):
            if isinstance(part, ImageUrlPart):
                found.append(from_url("image", part.image_url.url, (*at, j, "image_url", "url")))
            elif isinstance(part, FilePart):
                loc = (*at, j, "file", "file_data")
                found.append(
                    from_url("document", part.file.file_data, loc, name=part.file.filename or "")
                )
        return tuple(found)

    def problem(self) -> tuple[str, str] | None:
        """The field this message lacks or should not have, and why."""
        if self.role == "tool" and not self.tool_call_id:
            return "tool_call_id", "a tool message needs the tool_call_id it answers"
        if self.role != "assistant" and self.tool_calls:
            return "tool_calls", "only assistant messages carry tool_calls"
        if self.role != "assistant" and self.content is None:
            return "content", f"a {self.role} message needs content"
        return None


class StreamOptions(_Lenient):
    include_usage: bool = False


class McpTool(_Lenient):
    name: str = Field(min_length=1, max_length=200)


class McpServer(_Lenient):
    """One MCP server of the request: a registered one by `integration_fqn`, or a `url`."""

    integration_fqn: str | None = Field(None, min_length=1, max_length=300)
    url: str | None = Field(None, min_length=1, max_length=2000)
    enable_all_tools: bool = True
    tools: list[McpTool] = Field(default_factory=list, max_length=200)
    headers: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one_target(self) -> McpServer:
        if (self.integration_fqn is None) == (self.url is None):
            raise ValueError("give exactly one of integration_fqn or url")
        if self.url is not None and not re.match(r"https?://", self.url):
            raise ValueError("url must be an http(s) URL")
        return self


class ChatCompletionRequest(_Lenient):
    model: str | None = Field(None, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=1000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    iteration_limit: int = Field(ITERATION_LIMIT_DEFAULT, ge=1, le=ITERATION_LIMIT_MAX)
    mcp_servers: list[McpServer] = Field(default_factory=list, max_length=20)
    # OpenAI's options that the agent's version decides: accepted, ignored.
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    response_format: dict[str, Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    # Refused when they ask for what an agent cannot do.
    n: int | None = None
    tools: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _agent_can_do(self) -> ChatCompletionRequest:
        # Checked here rather than on each message so that the error names the field.
        problems = []
        for i, message in enumerate(self.messages):
            if (found := message.problem()) is not None:
                field, msg = found
                problems.append(ErrorItem(("messages", i, field), msg))
        if problems:
            raise Invalid(problems)
        if self.n is not None and self.n != 1:
            raise Invalid.at(("n",), "an agent answers with one choice: n must be 1")
        if self.tools:
            raise Invalid.at(
                ("tools",), "the agent's version defines its tools; a request cannot add any"
            )
        return self

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    def runtime_messages(self) -> tuple[Message, ...]:
        """The conversation as the runtime takes it. System and developer messages travel
        as user context (the agent's own system prompt stays first), as on the native API.
        Raises Invalid for a tool result that answers no call, or a call left unanswered."""
        out: list[Message] = []
        waiting: dict[str, tuple[int, int, str]] = {}  # call id → (message, call, name)

        def unanswered() -> Invalid:
            index, number, _ = next(iter(waiting.values()))
            return Invalid.at(
                ("body", "messages", index, "tool_calls", number, "id"),
                "this tool call has no tool message answering it",
            )

        for index, message in enumerate(self.messages):
            at = ("body", "messages", index, "content")
            found = message.attachments(at)
            if found and message.role in ("assistant", "tool"):
                raise Invalid.at(at, "only user and system messages may carry images or files")
            if message.role == "tool":
                call = waiting.pop(message.tool_call_id or "", None)
                if call is None:
                    raise Invalid.at(
                        ("body", "messages", index, "tool_call_id"),
                        "answers no tool call of the assistant message before it",
                    )
                out.append(
                    Message(
                        "tool",
                        message.text(),
                        tool_call_id=message.tool_call_id,
                        name=call[2],
                    )
                )
                continue
            if waiting:
                raise unanswered()
            if message.role == "assistant":
                calls = tuple(
                    ToolCallPart(c.id, c.function.name, c.function.arguments.strip() or "{}")
                    for c in message.tool_calls or ()
                )
                waiting = {c.call_id: (index, n, c.name) for n, c in enumerate(calls)}
                out.append(Message("assistant", message.text(), calls))
            else:
                out.append(Message("user", message.text(), attachments=found))
        if waiting:
            raise unanswered()
        return tuple(out)


MODEL_PATTERN = re.compile(r"(?P<name>[^@\s]+)(?:@(?P<version>[^@\s]+))?")


def model_reference(model: str | None) -> tuple[str, str]:
    """(agent name, version ref) of `model` on the model-naming route: `calculator`,
    `calculator@3`, `calculator@latest` or `calculator@<version uuid>`."""
    if not model or not model.strip():
        raise Invalid.at(("body", "model"), "name the agent to run: 'name' or 'name@3'", "missing")
    match = MODEL_PATTERN.fullmatch(model.strip())
    if match is None:
        raise Invalid.at(("body", "model"), "name the agent to run: 'name' or 'name@3'")
    return match["name"], match["version"] or "latest"


# ---------------------------------------------------------------- answers


def usage_body(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, before the stream and in it."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


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


def sse(data: dict[str, Any]) -> bytes:
    return (
        b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    )


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
            kind = "invalid_request_error" if event.code == "invalid_request" else "server_error"
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


def invalid_message(exc: Invalid) -> tuple[str, str | None, str | None]:
    """(message, param, code) of a validation refusal, OpenAI style."""
    items: list[ErrorItem] = exc.errors or [ErrorItem(("body",), "invalid request")]
    param = _param(items[0].loc)
    parts = [f"{_param(e.loc) or 'body'}: {e.msg}" for e in items]
    return "; ".join(parts), param, items[0].type


def _param(loc: tuple[str | int, ...]) -> str | None:
    path = loc[1:] if loc and loc[0] in ("body", "path", "query") else loc
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None
