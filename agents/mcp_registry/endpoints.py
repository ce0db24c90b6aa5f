"""A registered server as the client connects to it (headers decrypted, the network policy
of the settings), and its tools listed now for the registry's tools endpoint."""

from __future__ import annotations

from agentbuilder.errors import Conflict, DomainError
from agents.mcp_client.ssrf import NetworkPolicy, policy_from_settings
from agents.mcp_client.types import McpEndpoint, McpError, McpRefused, McpTimeout, RemoteTool
from agents.mcp_registry.secrets import HeadersUnreadable, decrypt_headers
from agents.models import McpServer


def endpoint_of(server: McpServer, policy: NetworkPolicy | None = None) -> McpEndpoint:
    """The server as the client connects to it. Raises HeadersUnreadable."""
    return McpEndpoint(
        url=server.url,
        transport=server.transport,
        headers=decrypt_headers(server.headers_encrypted),
        timeout=server.timeout,
        policy=policy or policy_from_settings(),
    )


class McpServerFailed(DomainError):
    """The server could not be listed (502)."""

    status = 502


class McpServerTimedOut(McpServerFailed):
    status = 504


class McpServerRefused(Conflict):
    """The server's address is no longer allowed by the network policy (409): nothing a
    retry fixes, and no failure of the server's (not a 502)."""


def mcp_server_endpoint(server: McpServer) -> McpEndpoint:
    """The endpoint to list `server` live. Raises McpServerFailed."""
    try:
        return endpoint_of(server)
    except HeadersUnreadable as exc:
        raise McpServerFailed(f"MCP server '{server.name}' is unavailable: {exc}") from None


async def mcp_server_tools(*, name: str, endpoint: McpEndpoint) -> tuple[RemoteTool, ...]:
    """The server's tools, fetched now (and cached for runs). Raises McpServerFailed,
    McpServerTimedOut or McpServerRefused."""
    # Imported here: the SDK is slow to load and only needed once a server is used.
    from agents.mcp_client.cache import tools_of

    try:
        return await tools_of(endpoint, live=True)
    except McpTimeout as exc:
        raise McpServerTimedOut(f"MCP server '{name}' {exc}") from None
    except McpRefused as exc:
        raise McpServerRefused(f"MCP server '{name}' {exc}") from None
    except McpError as exc:
        raise McpServerFailed(f"MCP server '{name}' {exc}") from None
