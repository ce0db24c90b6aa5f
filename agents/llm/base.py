"""The provider interface: one async stream of provider events per model call.

Providers translate a `ModelRequest` into their wire format and their answer back into
these events. Tool-call arguments arrive complete (providers join the fragments), and
usage is normalised to input/output/total tokens here, at the boundary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]
# What a model call is for: a turn of a conversation, the answer of a RAG agent from its
# passages, the rewrite of a question as a search query, the check of an answer against
# its passages, a task agent's answer to its rendered prompt, or an experiment's judge
# scoring an answer against a rubric (agents.evals.scorers.judge).
Purpose = Literal["chat", "rag_answer", "query_rewrite", "grounding_check", "task", "judge"]

# Task agents send their inputs as a user message that starts with this header.
TASK_INPUTS_HEADER = "Inputs:"
# RAG agents ask a model whether an answer is grounded by forcing this tool.
GROUNDING_TOOL = "grounding_check"
# An experiment's judge asks a model for its score of an answer by forcing this tool.
JUDGE_TOOL = "judge_score"
# RAG agents with multihop refinement ask a model to rewrite a question with this prompt.
QUERY_REWRITE_PROMPT = (
    "Rewrite the user's question as a short search query that would find the passages "
    "answering it. Answer with the query only."
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@dataclass(frozen=True)
class ToolCallPart:
    call_id: str
    name: str
    arguments: str  # a JSON object as text, "{}" when the model sent nothing


@dataclass
class PartialToolCall:
    """A tool call whose arguments arrive in fragments (both network providers stream so)."""

    call_id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)

    def part(self) -> ToolCallPart:
        return ToolCallPart(self.call_id, self.name, "".join(self.parts).strip() or "{}")


@dataclass(frozen=True)
class Attachment:
    """An image or a document a user sent with a message, as bytes with their media type."""

    kind: Literal["image", "document"]
    media_type: str  # "image/png", "application/pdf", ...
    data: bytes
    name: str = ""  # a document's name; Bedrock requires one
    # Where the request carried it (["body", "messages", 0, "content", 1]): errors name it.
    loc: tuple[str | int, ...] = ()


@dataclass(frozen=True)
class Message:
    role: Role
    text: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    # role "user": images and documents sent with the text, in the order they came
    attachments: tuple[Attachment, ...] = ()
    # role "tool": which call this answers, and whether the tool failed
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ModelRequest:
    model_id: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    # None: the model decides; a tool name: the model must call that tool
    force_tool: str | None = None
    max_tokens: int = 4000
    temperature: float = 0.0
    max_retries: int = 10
    timeout: float = 3600.0
    # What the runtime asks for, and for a grounded answer the passages it must come from
    # (for a judge: the answer judged, then what it is judged against). Network providers
    # send neither: the prompt already says it and shows the passages. The offline model,
    # which cannot read a prompt, goes by them.
    purpose: Purpose = "chat"
    context: tuple[str, ...] = ()
    # Without a forced tool: "auto" (the model decides), "none" (no tool call), "required"
    # (some tool call). OpenAI's tool_choice, as a client of /v1/openai asks for it.
    tool_choice: Literal["auto", "none", "required"] = "auto"
    # False: at most one tool call in the answer. Providers that cannot be told so are
    # trimmed to the first call by the runtime.
    parallel_tool_calls: bool = True
    # The W3C `traceparent` of the model call's span: network providers send it as a header,
    # so a provider's (or a proxy's) own tracing joins the run's trace.
    traceparent: str | None = None
    # False: nothing reads the text as it is made (docs/architecture.md#non-streamed-calls),
    # so a network provider asks for one whole answer (Bedrock's Converse, chat completions
    # with `stream: false`), which costs both sides less than a stream of deltas. The
    # events are the same, the text in one TextChunk.
    stream: bool = True


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more model calls. `input_tokens` counts every token sent, those the
    provider read from its prompt cache included; `cached_input_tokens` is that cached part,
    which providers bill at a lower price (agents.runtime.pricing)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        out = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cached_input_tokens:  # only where a provider reported a cache hit
            out["cached_input_tokens"] = self.cached_input_tokens
        return out


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    call: ToolCallPart


@dataclass(frozen=True)
class Finished:
    usage: Usage = field(default_factory=Usage)
    stop_reason: Literal["end_turn", "tool_use", "max_tokens", "other"] = "end_turn"


ProviderEvent = TextChunk | ToolCallChunk | Finished


class ProviderError(Exception):
    """A model call that failed after the provider's own retries.

    `fallback_ok`: whether another model may answer where this one failed (a config's
    fallbackModels): yes after throttling, a timeout, a server's or a connection's failure;
    no when the provider refused the request itself as invalid (a 400), as another model
    would too.
    """

    def __init__(self, message: str, *, timeout: bool = False, fallback_ok: bool = True):
        super().__init__(message)
        self.timeout = timeout
        self.fallback_ok = fallback_ok

    @property
    def code(self) -> Literal["provider_error", "provider_timeout"]:
        """The run's failure code (agents.runtime.failures) this error ends a run with."""
        return "provider_timeout" if self.timeout else "provider_error"


class Provider(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one model call (streamed or not upstream, as `request.stream` asks);
        ends with exactly one Finished. Raises ProviderError."""
        ...
