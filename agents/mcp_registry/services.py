"""Writes of the MCP server registry (docs/api.md#mcp-servers), and the checks a server or a
raw URL passes before it is stored or referenced.

EDIT on an environment registers, changes and removes its servers; only superusers change
global ones. Header values are encrypted at rest (`secrets`) and never leave through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction

from agentbuilder.errors import Conflict, ErrorItem, Invalid
from agentbuilder.users import User
from agents.audit.services import CHANGED, audit_record, created, diff, snapshot, url_shown
from agents.mcp_client.ssrf import NetworkPolicy, UrlRefused, check_url, policy_from_settings
from agents.mcp_client.types import STREAMABLE_HTTP
from agents.mcp_registry.secrets import encrypt_headers
from agents.mcp_registry.selectors import require_write
from agents.models import NAME_PATTERN, Environment, McpServer, McpTransport

Loc = tuple[str | int, ...]

# RFC 9110 token characters; values may not break the header block.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,200}$")
FORBIDDEN_IN_VALUE = re.compile(r"[\r\n\x00]")
MAX_HEADERS, MAX_HEADER_VALUE = 50, 8192
# Set by the HTTP client and the MCP transport themselves; a stored value would break them.
RESERVED_HEADERS = frozenset(
    ("host", "content-length", "content-type", "transfer-encoding", "connection", "accept")
) | {"mcp-session-id", "mcp-protocol-version", "last-event-id"}
MAX_TIMEOUT = 300.0
UNREGISTERED_OFF = (
    "unregistered MCP server URLs are not allowed here: register the server "
    "(POST /v1/mcp-servers) and reference it"
)
# What a server's records show of it: its URL without credentials, its headers' names only
# (a value is "changed", whatever it was).
AUDITED_FIELDS = (
    "environment",
    "name",
    "description",
    "url",
    "transport",
    "timeout",
    "enabled",
    "header_names",
)
SCOPE_NAME_CONSTRAINTS = (
    "mcp_server_name_ci_unique_per_environment",
    "mcp_server_name_ci_unique_global",
)


@transaction.atomic
def mcp_server_create(
    *,
    user: User,
    environment: Environment | None,
    name: str,
    url: str,
    transport: str = STREAMABLE_HTTP,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    enabled: bool = True,
    description: str = "",
) -> McpServer:
    """Register a server (environment None: global). Raises PermissionDenied, Invalid or
    Conflict."""
    require_write(user, environment)
    fields: dict[str, Any] = {
        "name": name,
        "url": url.strip(),
        "transport": transport,
        "headers": dict(headers or {}),
        "timeout": timeout,
        "description": description,
    }
    _check(fields)
    server = McpServer(environment=environment, enabled=enabled, created_by=user)
    _assign(server, fields)
    _save(server)
    changes = created(_audited(server))
    if server.headers_encrypted:
        changes["headers"] = {"from": None, "to": CHANGED}
    _record(user, "create", server, changes)
    return server


@transaction.atomic
def mcp_server_update(*, user: User, server: McpServer, changes: dict[str, Any]) -> McpServer:
    """Change fields of a server; `headers` replaces every header. Raises PermissionDenied,
    Invalid or Conflict."""
    require_write(user, server.environment)
    if "url" in changes:
        changes = {**changes, "url": str(changes["url"]).strip()}
        if "headers" not in changes and _origin(changes["url"]) != _origin(server.url):
            # Stored secrets were given for the old host: never send them to a new one.
            # An EDIT holder who may not read them could otherwise redirect them to itself.
            changes["headers"] = {}
    _check(changes)
    before, old_url, old_headers = _audited(server), server.url, server.headers_encrypted
    _assign(server, changes)
    _save(server)
    changed = diff(before, _audited(server))
    if server.url != old_url and "url" not in changed:  # only its credentials changed
        changed["url"] = {"from": CHANGED, "to": CHANGED}
    # Re-encrypted values differ even when equal: any headers given count as a change.
    if "headers" in changes and (old_headers or server.headers_encrypted):
        changed["headers"] = {"from": CHANGED, "to": CHANGED}
    if changed:
        _record(user, "update", server, changed)
    return server


def _audited(server: McpServer) -> dict[str, Any]:
    return snapshot(server, AUDITED_FIELDS) | {"url": url_shown(server.url)}


def _record(
    user: User, action: str, server: McpServer, changes: dict[str, dict[str, Any]] | None = None
) -> None:
    audit_record(
        user=user,
        action=action,
        obj=server,
        object_repr=f"{server.name} ({url_shown(server.url)})",
        environment=server.environment,
        changes=changes,
    )


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a malformed port: _check refuses the URL itself
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


@transaction.atomic
def mcp_server_delete(*, user: User, server: McpServer) -> None:
    """Remove a server; agents that reference it are told so when they call its tools."""
    require_write(user, server.environment)
    server_id = server.pk
    server.delete()
    server.pk = server_id  # the record names the row that went
    _record(user, "delete", server)


def _assign(server: McpServer, fields: Mapping[str, Any]) -> None:
    for key, value in fields.items():
        if key == "headers":
            server.header_names = sorted(value)
            server.headers_encrypted = encrypt_headers(value)
        else:
            setattr(server, key, value)


def _save(server: McpServer) -> None:
    try:
        with transaction.atomic():
            server.save()
    except IntegrityError as exc:
        constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
        if constraint in SCOPE_NAME_CONSTRAINTS:
            where = (
                f"environment '{server.environment.name}'" if server.environment else "global scope"
            )
            raise Conflict(f"MCP server '{server.name}' already exists in {where}") from None
        raise


def _check(fields: Mapping[str, Any]) -> None:
    errors = [ErrorItem(("body", *loc), msg) for loc, msg in _problems(fields)]
    if errors:
        raise Invalid(errors)


def _problems(fields: Mapping[str, Any]) -> Iterable[tuple[Loc, str]]:
    if "name" in fields and not re.fullmatch(NAME_PATTERN, str(fields["name"])):
        yield ("name",), "1 to 100 characters: letters, digits, '-', '_' and '.'"
    if len(str(fields.get("description", ""))) > 200:
        yield ("description",), "at most 200 characters"
    if "transport" in fields and fields["transport"] not in McpTransport.values:
        yield ("transport",), f"must be one of {', '.join(McpTransport.values)}"
    if "timeout" in fields and not 0 < float(fields["timeout"]) <= MAX_TIMEOUT:
        yield ("timeout",), f"seconds, more than 0 and at most {MAX_TIMEOUT:g}"
    if "url" in fields:
        try:
            check_url(fields["url"], policy_from_settings())
        except UrlRefused as exc:
            yield ("url",), str(exc)
    if "headers" in fields:
        yield from header_problems(fields["headers"])


def header_problems(headers: Mapping[str, str]) -> Iterable[tuple[Loc, str]]:
    if len(headers) > MAX_HEADERS:
        yield ("headers",), f"at most {MAX_HEADERS} headers"
    for name, value in headers.items():
        if not HEADER_NAME.fullmatch(name):
            yield ("headers", name), "not a valid header name"
        elif name.lower() in RESERVED_HEADERS:
            yield ("headers", name), "set by the MCP client itself; it cannot be configured"
        elif FORBIDDEN_IN_VALUE.search(value) or len(value) > MAX_HEADER_VALUE:
            yield (
                ("headers", name),
                f"a header value is one line of at most {MAX_HEADER_VALUE} characters",
            )


def raw_url_problem(url: str, policy: NetworkPolicy | None = None) -> str | None:
    """Why a raw URL may not be referenced, or None."""
    if not settings.MCP_ALLOW_UNREGISTERED_URLS:
        return UNREGISTERED_OFF
    try:
        check_url(url, policy or policy_from_settings())
    except UrlRefused as exc:
        return str(exc)
    return None
