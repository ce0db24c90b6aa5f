"""The chat completions request: OpenAI's body plus the agent endpoint's `iteration_limit`
and `mcp_servers`, and how it maps to runtime messages and MCP server requests."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from agentbuilder.errors import ErrorItem, Invalid
from agents.llm.base import Attachment, Message, ToolCallPart
from agents.mcp_registry.request import McpServerRequest
from agents.protocols.attachments import from_url
from agents.protocols.names import agent_reference

# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "ChatCompletions"

ITERATION_LIMIT_DEFAULT = 5
ITERATION_LIMIT_MAX = 20


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
    include_usage: StrictBool = False


class McpTool(_Lenient):
    name: str = Field(min_length=1, max_length=200)


class McpServer(_Lenient):
    """One MCP server of the request: a registered one by `integration_fqn`, or a `url`."""

    integration_fqn: str | None = Field(None, min_length=1, max_length=300)
    url: str | None = Field(None, min_length=1, max_length=2000)
    enable_all_tools: StrictBool = True
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
    stream: StrictBool = False
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
    parallel_tool_calls: StrictBool | None = None
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
        return self

    @model_validator(mode="after")
    def _request_tools(self) -> ChatCompletionRequest:
        # The seed's routes; /v1/openai's request replaces this check (client tools).
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


def model_reference(model: str | None) -> tuple[str, str]:
    """(agent name, version ref) of `model` on the model-naming route (agent_reference)."""
    if not model or not model.strip():
        raise Invalid.at(("body", "model"), "name the agent to run: 'name' or 'name@3'", "missing")
    reference = agent_reference(model)
    if reference is None:
        raise Invalid.at(("body", "model"), "name the agent to run: 'name' or 'name@3'")
    return reference


def mcp_requests(body: ChatCompletionRequest) -> tuple[McpServerRequest, ...]:
    """The request's `mcp_servers`, for this run only: registered servers by
    `integration_fqn` (name or id), raw URLs where settings allow them."""
    return tuple(
        McpServerRequest(
            ("body", "mcp_servers", i),
            server=server.integration_fqn,
            url=server.url,
            headers=server.headers or {},
            allowed_tools=None
            if server.enable_all_tools
            else tuple(tool.name for tool in server.tools),
        )
        for i, server in enumerate(body.mcp_servers)
    )
