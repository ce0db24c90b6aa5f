"""What the client is given (an endpoint) and answers (tools, a tool's answer, its errors);
imports no SDK, which is slow to load and only needed once a server is actually used."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.mcp_client.ssrf import NetworkPolicy

STREAMABLE_HTTP, SSE = "streamable_http", "sse"


class McpError(Exception):
    """An MCP server could not be used; the message says why, worded to follow the
    server's name: "is unavailable: cannot connect", "timed out: …"."""


class McpUnavailable(McpError):
    """Refused address, nothing listening, an HTTP error, or a broken connection."""


class McpRefused(McpUnavailable):
    """The server's address is not allowed (MCP_ALLOWED_HOSTS, private networks): the
    operator's policy, not the server, stands in the way."""


class McpTimeout(McpError):
    """No answer within the server's timeout."""


@dataclass(frozen=True)
class McpEndpoint:
    url: str
    transport: str = STREAMABLE_HTTP
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # secrets
    timeout: float = 30.0
    policy: NetworkPolicy = field(default_factory=NetworkPolicy)


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolAnswer:
    text: str
    is_error: bool = False
    value: Any = None  # the structured content, when the server sent one
