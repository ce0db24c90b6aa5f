"""mcp tools: every tool an MCP server lists (or only its allowedTools) becomes a Tool whose
call runs on the server.

The servers are listed once per run, concurrently, through a brief cache. A tool keeps the
server's name for it unless another tool of the agent already has that name (config tools
come first, then servers in order): then it is `<server>_<tool>`. A server that cannot be
listed still offers its allowed tools, or one tool named after itself, so that the model's
call comes back saying why; the run goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from agents import json_schemas
from agents.llm.base import ToolSpec
from agents.mcp_client.cache import tools_of
from agents.mcp_client.client import call_tool
from agents.mcp_client.types import McpEndpoint, McpError, RemoteTool
from agents.runtime.depth import HEADER, CallDepth
from agents.runtime.spec import McpServerSpec
from agents.runtime.tools.base import Outcome, Tool, ToolFailure

logger = logging.getLogger(__name__)

MAX_NAME = 64  # what Bedrock and OpenAI accept as a tool name
MAX_DESCRIPTION = 2000
MAX_RESULT = 100_000  # characters of a result the model reads: a server cannot flood a run
OPEN_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


async def mcp_tools(
    servers: Sequence[McpServerSpec], taken: set[str], depth: CallDepth | None = None
) -> dict[str, Tool]:
    """The Tools of `servers`, named apart from `taken` (which this extends). A call sends
    `depth` (the callee's, when the server is an agent) as the call-depth header."""
    listings = await asyncio.gather(*(_listing(server) for server in servers))
    headers = {HEADER: str((depth or CallDepth(1)).depth)}
    tools: dict[str, Tool] = {}
    for server, listing in zip(servers, listings, strict=True):
        server = _with_headers(server, headers)
        if isinstance(listing, str):
            tools.update(_stand_ins(server, listing, taken))
        else:
            tools.update(_offered(server, listing, taken))
    return tools


def _with_headers(server: McpServerSpec, headers: dict[str, str]) -> McpServerSpec:
    """`server` whose calls also send `headers`. Listings do not: they run no agent, and
    their cache is keyed by the endpoint as registered."""
    if server.endpoint is None:
        return server
    names = {name.lower() for name in headers}
    kept = {k: v for k, v in server.endpoint.headers.items() if k.lower() not in names}
    endpoint = replace(server.endpoint, headers={**kept, **headers})
    return replace(server, endpoint=endpoint)


async def _listing(server: McpServerSpec) -> tuple[RemoteTool, ...] | str:
    """The server's tools, or why it cannot list them."""
    if server.endpoint is None:
        return server.unavailable
    try:
        return await tools_of(server.endpoint)
    except McpError as exc:
        logger.warning("MCP server %s could not be listed: %s", server.name, exc)
        return str(exc)


def _offered(
    server: McpServerSpec, listing: tuple[RemoteTool, ...], taken: set[str]
) -> Iterator[tuple[str, Tool]]:
    assert server.endpoint is not None
    allowed = None if server.allowed_tools is None else set(server.allowed_tools)
    for remote in listing:
        if allowed is not None and remote.name not in allowed:
            continue
        parameters = _parameters(remote.input_schema)
        if parameters is None:
            logger.warning("MCP tool %s of %s takes no object: left out", remote.name, server.name)
            continue
        name = _free_name(remote.name, server.name, taken)
        description = remote.description.strip() or f"{remote.name} of MCP server {server.name}"
        refused = _refused_schema(parameters)
        if refused is not None:
            # Offered anyway, so that a call says why it cannot be made; nothing is fetched.
            logger.warning("MCP tool %s of %s: %s", remote.name, server.name, refused)
            message = f"MCP server '{server.name}' offers {remote.name} with {refused}"
            spec = ToolSpec(name, description[:MAX_DESCRIPTION], OPEN_OBJECT)
            yield name, Tool(spec, _refusal(message))
            continue
        spec = ToolSpec(name, description[:MAX_DESCRIPTION], parameters)
        tool = _remote_tool(spec, server.name, server.endpoint, remote.name)
        yield name, replace(tool, approval=server.approval(remote.name))


def _refused_schema(parameters: dict[str, Any]) -> str | None:
    """Why the platform will not use a server's input schema, or None."""
    try:
        json_schemas.check_refs(parameters)
    except json_schemas.SchemaRefused as exc:
        at = f" at {exc.where}" if exc.path else ""
        return f"an input schema that cannot be used{at}: {exc.message}"
    return None


def _refusal(message: str) -> Callable[[dict[str, Any]], Awaitable[Outcome]]:
    async def refuse(arguments: dict[str, Any]) -> Outcome:
        raise ToolFailure(message)

    return refuse


def _stand_ins(server: McpServerSpec, reason: str, taken: set[str]) -> Iterator[tuple[str, Tool]]:
    """Tools for a server that could not be listed: its allowed tools (tried anyway when it
    has an endpoint, in case it is back by the time of the call), else one tool named after
    it; either way a call that cannot reach it says why."""
    refuse = _refusal(f"MCP server '{server.name}' {reason}")
    if server.allowed_tools is not None:
        for remote_name in server.allowed_tools:
            name = _free_name(remote_name, server.name, taken)
            description = f"{remote_name} of MCP server {server.name}, unusable now ({reason})"
            spec = ToolSpec(name, description, OPEN_OBJECT)
            if server.endpoint is None:
                yield name, Tool(spec, refuse)
            else:
                tool = _remote_tool(spec, server.name, server.endpoint, remote_name)
                yield name, replace(tool, approval=server.approval(remote_name))
        return
    name = _free_name(server.name, "mcp", taken)
    description = f"The tools of MCP server {server.name}, unusable now ({reason})"
    yield name, Tool(ToolSpec(name, description, OPEN_OBJECT), refuse)


def _remote_tool(spec: ToolSpec, server: str, endpoint: McpEndpoint, remote_name: str) -> Tool:
    async def call(arguments: dict[str, Any]) -> Outcome:
        try:
            answer = await call_tool(endpoint, remote_name, arguments)
        except McpError as exc:
            raise ToolFailure(f"MCP server '{server}' {exc}") from None
        text = answer.text
        if len(text) > MAX_RESULT:
            text = f"{text[:MAX_RESULT]}\n[cut: the result had {len(answer.text)} characters]"
        if answer.is_error:
            return Outcome(text or f"{remote_name} failed without a message", is_error=True)
        return Outcome(text, value=answer.value if answer.value is not None else text)

    return Tool(spec, call)


def _parameters(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The input schema as model providers take it: an object, with properties."""
    kind = schema.get("type", "object")
    if kind != "object":
        return None
    return {"type": "object", "properties": {}, **schema}


def _free_name(wanted: str, prefix: str, taken: set[str]) -> str:
    for candidate in (_clean(wanted), _clean(f"{prefix}_{wanted}")):
        if candidate and candidate not in taken:
            taken.add(candidate)
            return candidate
    base = _clean(f"{prefix}_{wanted}")[: MAX_NAME - 4]
    for number in itertools.count(2):
        candidate = f"{base}_{number}"
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    raise AssertionError("unreachable")  # pragma: no cover


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:MAX_NAME]
