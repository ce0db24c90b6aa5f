"""List and call the tools of an MCP server with the official `mcp` SDK.

Each operation opens its own session (streamable HTTP, or SSE for servers that only speak
that) under one deadline, the server's timeout, which covers the address check, connecting,
the handshake and the answer. Whatever goes wrong leaves as an McpError that says what
happened, worded to follow the server's name ("MCP server 'x' timed out: …"), for a model
and an admin to read; cancellation passes through untouched.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT, CallToolResult

from agents.mcp_client.ssrf import UrlRefused, check_url_async
from agents.mcp_client.types import (
    SSE,
    McpEndpoint,
    McpError,
    McpRefused,
    McpTimeout,
    McpUnavailable,
    RemoteTool,
    ToolAnswer,
)

T = TypeVar("T")

MAX_PAGES = 20  # of a tool listing: a server that paginates forever cannot hang a run


async def list_tools(endpoint: McpEndpoint) -> list[RemoteTool]:
    """Every tool the server offers. Raises McpError."""

    async def walk(client: Client) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(
                RemoteTool(t.name, t.description or "", dict(t.input_schema or {}))
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    return await _with_client(endpoint, walk)


async def call_tool(endpoint: McpEndpoint, name: str, arguments: dict[str, Any]) -> ToolAnswer:
    """Call one tool. A tool that fails answers with is_error; raises McpError when the
    server itself cannot be used."""

    async def call(client: Client) -> CallToolResult:
        return await client.call_tool(name, arguments)

    result = await _with_client(endpoint, call)
    return ToolAnswer(result_text(result), bool(result.is_error), result.structured_content)


def result_text(result: CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind == "resource":
            resource = block.resource  # type: ignore[union-attr]
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")  # type: ignore[union-attr]
        else:
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]".replace(" ]", "]"))
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


# ---------------------------------------------------------------- sessions


async def _with_client(endpoint: McpEndpoint, operation: Callable[[Client], Awaitable[T]]) -> T:
    scope = anyio.CancelScope(deadline=anyio.current_time() + endpoint.timeout)
    try:
        with scope:
            await check_url_async(endpoint.url, endpoint.policy)
            async with _session(endpoint) as client:
                return await operation(client)
    except UrlRefused as exc:
        raise McpRefused(f"is not allowed: {exc}") from None
    except Exception as exc:
        if scope.cancel_called:  # the deadline hit while the session was closing
            raise _timeout(endpoint) from None
        raise _mapped(exc, endpoint) from None
    raise _timeout(endpoint)  # the scope swallowed its own deadline


@asynccontextmanager
async def _session(endpoint: McpEndpoint) -> AsyncIterator[Client]:
    headers = dict(endpoint.headers)
    if endpoint.transport == SSE:
        transport = sse_client(
            endpoint.url,
            headers=headers,
            timeout=endpoint.timeout,
            sse_read_timeout=endpoint.timeout,
            httpx_client_factory=_http_client,
        )
        async with Client(transport, cache=None) as client:
            yield client
        return
    http = _http_client(headers=headers, timeout=httpx2.Timeout(endpoint.timeout))
    async with (
        http,
        Client(streamable_http_client(endpoint.url, http_client=http), cache=None) as client,
    ):
        yield client


def _http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=_tls())


@functools.cache
def _tls() -> ssl.SSLContext:
    # Loading the CA bundle costs ~100 ms: once per process, not once per call.
    return ssl.create_default_context()


def _timeout(endpoint: McpEndpoint) -> McpTimeout:
    return McpTimeout(f"timed out: no answer within {endpoint.timeout:g} s")


def _mapped(exc: BaseException, endpoint: McpEndpoint) -> McpError:
    leaf = _leaf(exc)
    if isinstance(leaf, MCPError):
        if leaf.code == REQUEST_TIMEOUT:
            return _timeout(endpoint)
        return McpError(f"answered with an error: {leaf.message}")
    if isinstance(leaf, TimeoutError | httpx2.TimeoutException):
        return _timeout(endpoint)
    if isinstance(leaf, httpx2.HTTPStatusError):
        status = leaf.response.status_code
        return McpUnavailable(f"is unavailable: it answered HTTP {status}")
    if isinstance(leaf, httpx2.ConnectError | ConnectionError):
        return McpUnavailable(f"is unavailable: cannot connect ({leaf})")
    return McpUnavailable(f"is unavailable: {str(leaf) or type(leaf).__name__}")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the exception groups of the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc
