"""The agent API protocol's objects (seeds/agent-api-protocol.txt, sections 1 to 7), as the
document defines them."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field, RootModel, StrictBool

from agents.webhooks.request import WebhookBody

# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "AgentProtocol"

# ---------------------------------------------------------------- 1. enums


class Role(StrEnum):
    ASSISTANT = "assistant"
    USER = "user"
    SYSTEM = "system"


class MessageType(StrEnum):
    MESSAGE = "message"
    FUNCTION_CALL = "function_call"
    FUNCTION_CALL_OUTPUT = "function_call_output"
    PLUGIN_CALL = "plugin_call"
    PLUGIN_CALL_OUTPUT = "plugin_call_output"
    COMPONENT_CALL = "component_call"
    COMPONENT_CALL_OUTPUT = "component_call_output"
    MCP_LIST_TOOLS = "mcp_list_tools"
    MCP_APPROVAL_REQUEST = "mcp_approval_request"
    MCP_TOOL_CALL = "mcp_call"
    MCP_APPROVAL_RESPONSE = "mcp_approval_response"
    HEARTBEAT = "heartbeat"
    ERROR = "error"


class RunStatus(StrEnum):
    Created = "created"
    InProgress = "in_progress"
    Completed = "completed"
    Canceled = "canceled"
    Failed = "failed"
    Rejected = "rejected"
    Unknown = "unknown"


class ContentType(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    DATA = "data"


class _Model(BaseModel):
    # Unknown keys are refused (docs/api.md#conventions), as on every other route.
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- 2. tools, 7. error


class Error(_Model):
    code: str
    message: str


class FunctionParameters(_Model):
    type: str
    properties: dict[str, Any]
    required: list[str] | None


class FunctionTool(_Model):
    name: str
    description: str
    parameters: FunctionParameters | dict[str, Any]


class Tool(_Model):
    type: str | None = None
    function: FunctionTool | None = None


class FunctionCall(_Model):
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class FunctionCallOutput(_Model):
    call_id: str
    output: str


# ---------------------------------------------------------------- 3. content, 4. message


class Event(_Model):
    sequence_number: int | None = None
    object: str
    status: RunStatus | None = None
    error: Error | None = None


class Content(Event):
    type: str
    object: Literal["content"] = "content"
    index: int | None = None
    delta: bool | None = False
    msg_id: str | None = None


class ImageContent(Content):
    type: Literal["image"] = "image"
    image_url: str | None = None


class TextContent(Content):
    type: Literal["text"] = "text"
    text: str | None = None


class DataContent(Content):
    type: Literal["data"] = "data"
    data: dict[str, Any] | None = None


AnyContent = Annotated[TextContent | ImageContent | DataContent, Field(discriminator="type")]


def _message_id() -> str:
    return f"msg_{uuid4()}"


class Message(Event):
    id: str = Field(default_factory=_message_id)
    object: Literal["message"] = "message"
    type: MessageType = MessageType.MESSAGE
    status: RunStatus = RunStatus.Created
    role: Role | None = None
    content: list[AnyContent] | None = None
    code: str | None = None
    message: str | None = None


# ---------------------------------------------------------------- 5. requests


class BaseRequest(_Model):
    input: list[Message] = Field(min_length=1, max_length=1000)
    stream: StrictBool = True


class AgentRequest(BaseRequest):
    """The generation parameters and `tools` are accepted as the document defines them and
    left to the agent version's config, which owns its model and tools."""

    model: str | None = None
    top_p: float | None = None
    temperature: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    max_tokens: int | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(default=1, ge=1, le=5)
    seed: int | None = None
    tools: list[Tool | dict[str, Any]] | None = None
    session_id: str | None = Field(None, min_length=1, max_length=100)
    response_id: str | None = None
    # The platform's, beyond the document: a background run (docs/api.md#background-runs).
    background: StrictBool = False
    webhook: WebhookBody | None = Field(
        None, description="This run's events also go here (docs/api.md#webhooks)."
    )


# ---------------------------------------------------------------- 6. responses


def epoch_now() -> int:
    return int(time.time())


class BaseResponse(Event):
    id: str = Field(default_factory=lambda: f"response_{uuid4()}")
    object: Literal["response"] = "response"
    status: RunStatus = RunStatus.Created
    created_at: int = Field(default_factory=epoch_now)
    completed_at: int | None = None
    output: list[Message] | None = None
    usage: dict[str, Any] | None = None


class AgentResponse(BaseResponse):
    session_id: str | None = None


class StreamObject(RootModel[AgentResponse | Message | TextContent | DataContent]):
    """What one server-sent event of a streamed response carries: the response as it
    changes, a message opened or completed, or a part of one (a text delta included)."""


def dump(model: BaseModel) -> dict[str, Any]:
    """An object on the wire: what is not set is left out (the document's examples)."""
    return model.model_dump(mode="json", exclude_none=True)
