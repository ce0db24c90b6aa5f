"""What the runtime and the services pass around about MCP servers; imports no SDK, which
is slow to load and only needed once a server is actually used."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.mcp.ssrf import NetworkPolicy

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


@dataclass(frozen=True)
class McpServerRequest:
    """A server one request names for its run only (chat completions' `mcp_servers`):
    a registered server by name or id, or a raw URL where settings allow it."""

    loc: tuple[str | int, ...]  # of the item in the request body, for errors
    server: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    allowed_tools: tuple[str, ...] | None = None  # None: every tool the server lists
    server_key: str = "integration_fqn"  # how the body names `server`
