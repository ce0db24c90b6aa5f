"""What a run's request names of MCP servers for that run only, as the protocols parse it:
free of the ORM, so a request parser builds it without touching the registry;
`run_servers` resolves it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
