"""The MCP servers a run may use, as the runtime takes them: the config's references and
the request's own, resolved from the registry (headers decrypted)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db.models import Q

from agentbuilder.errors import ErrorItem, Invalid
from agents.configs import McpServerReference, McpTool
from agents.mcp_client.ssrf import NetworkPolicy, UrlRefused, policy_from_settings, split
from agents.mcp_client.types import STREAMABLE_HTTP, McpEndpoint
from agents.mcp_registry.endpoints import endpoint_of
from agents.mcp_registry.request import McpServerRequest
from agents.mcp_registry.secrets import HeadersUnreadable
from agents.mcp_registry.selectors import mcp_server_by_ref
from agents.mcp_registry.services import UNREGISTERED_OFF, header_problems, raw_url_problem
from agents.models import Environment, McpServer
from agents.runtime.spec import McpServerSpec


def config_server_specs(
    *, environment_id: uuid.UUID, tools: Sequence[McpTool]
) -> tuple[McpServerSpec, ...]:
    """The servers behind the config's mcp tools, in order. One that was deleted, disabled
    or is no longer allowed stays in the list, unusable, so its tools can say why."""
    references = [ref for tool in tools for ref in tool.mcp_server_references]
    ids = [ref.id for ref in references if ref.id is not None]
    rows = McpServer.objects.filter(
        Q(environment_id=environment_id) | Q(environment__isnull=True), pk__in=ids
    ).in_bulk()
    policy = policy_from_settings()
    return tuple(_reference_spec(ref, rows, policy) for ref in references)


def _reference_spec(
    ref: McpServerReference, rows: Mapping[Any, McpServer], policy: NetworkPolicy
) -> McpServerSpec:
    configured = ref.tool_configuration
    allowed = configured.allowed_tools
    allowed_tools = tuple(allowed) if allowed is not None else None
    if ref.url is not None:
        spec = url_spec(ref.url, {}, allowed_tools, policy)
    elif (row := rows.get(ref.id)) is None:
        spec = McpServerSpec(f"mcp-{str(ref.id)[:8]}", None, allowed_tools, "no longer exists")
    else:
        spec = row_spec(row, allowed_tools, policy)
    return replace(
        spec,
        require_approval=configured.require_approval,
        tool_approvals=dict(configured.tool_approvals or {}),
    )


def row_spec(
    row: McpServer, allowed_tools: tuple[str, ...] | None, policy: NetworkPolicy
) -> McpServerSpec:
    if not row.enabled:
        return McpServerSpec(row.name, None, allowed_tools, "is disabled")
    try:
        endpoint = endpoint_of(row, policy)
    except HeadersUnreadable as exc:
        return McpServerSpec(row.name, None, allowed_tools, f"is unavailable: {exc}")
    return McpServerSpec(row.name, endpoint, allowed_tools)


def url_spec(
    url: str,
    headers: Mapping[str, str],
    allowed_tools: tuple[str, ...] | None,
    policy: NetworkPolicy,
) -> McpServerSpec:
    """A raw URL; the address guard runs again before every connection."""
    try:
        name = split(url)[0]
    except UrlRefused:
        name = "mcp"
    if not settings.MCP_ALLOW_UNREGISTERED_URLS:
        return McpServerSpec(name, None, allowed_tools, f"is not allowed: {UNREGISTERED_OFF}")
    timeout = float(settings.MCP_TIMEOUT_SECONDS)
    endpoint = McpEndpoint(url, STREAMABLE_HTTP, dict(headers), timeout, policy)
    return McpServerSpec(name, endpoint, allowed_tools)


def request_server_specs(
    *, environment: Environment, requests: Sequence[McpServerRequest]
) -> tuple[McpServerSpec, ...]:
    """The servers a request names for its run. Raises Invalid at each bad item."""
    policy = policy_from_settings()
    specs: list[McpServerSpec] = []
    errors: list[ErrorItem] = []
    for request in requests:
        if request.url is not None:
            problem = raw_url_problem(request.url, policy)
            problem = problem or _header_problem(request)
            if problem:
                errors.append(ErrorItem((*request.loc, "url"), problem))
                continue
            specs.append(url_spec(request.url, request.headers, request.allowed_tools, policy))
            continue
        row = mcp_server_by_ref(environment, request.server or "")
        loc = (*request.loc, request.server_key)
        if row is None:
            msg = f"unknown MCP server '{request.server}' in environment '{environment.name}'"
            errors.append(ErrorItem(loc, msg))
        elif not row.enabled:
            errors.append(ErrorItem(loc, f"MCP server '{row.name}' is disabled"))
        else:
            specs.append(row_spec(row, request.allowed_tools, policy))
    if errors:
        raise Invalid(errors)
    return tuple(specs)


def _header_problem(request: McpServerRequest) -> str | None:
    problems = [msg for _, msg in header_problems(request.headers)]
    return f"headers: {problems[0]}" if problems else None
