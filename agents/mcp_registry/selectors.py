"""Reads of the MCP server registry (docs/api.md#mcp-servers).

A server belongs to one environment, or to all (no environment: global). READ on the
environment shows its servers and the global ones; EDIT on it changes its servers; only
superusers change global ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from django.db.models import F, Q, QuerySet

from agentbuilder.errors import NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import Action, holds_on_environment, require_on_environment
from agents.models import Environment, McpServer


def mcp_server_list(*, user: User, environment: Environment) -> QuerySet[McpServer]:
    """The servers of `environment` and the global ones. Raises PermissionDenied."""
    require_on_environment(user, environment, Action.READ)
    return _visible(environment).order_by("name", "id")


def mcp_server_get(
    *, user: User, environment: Environment, server_id: uuid.UUID, action: Action = Action.READ
) -> McpServer:
    """One server the caller may READ (and act on as `action`: READ or EDIT).

    Raises NotFound or PermissionDenied.
    """
    readable = holds_on_environment(user, environment, Action.READ)
    server = _visible(environment).select_related("environment").filter(pk=server_id).first()
    if server is None or not readable:
        raise NotFound(f"MCP server '{server_id}' not found.")
    if action != Action.READ:
        require_write(user, server.environment)
    return server


def _visible(environment: Environment) -> QuerySet[McpServer]:
    return McpServer.objects.filter(Q(environment=environment) | Q(environment__isnull=True))


def mcp_server_ids_known(environment: Environment, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `ids` that name a server of the environment or a global one (no query for
    none)."""
    if not ids:
        return set()
    return set(_visible(environment).filter(pk__in=ids).values_list("pk", flat=True))


def require_write(user: User, environment: Environment | None) -> None:
    """Raises PermissionDenied unless `user` may change the servers of `environment`
    (None: the global ones)."""
    if environment is not None:
        require_on_environment(user, environment, Action.EDIT)
    elif not user.is_superuser:
        raise PermissionDenied("Only superusers can change global MCP servers.")


def mcp_server_by_ref(environment: Environment, ref: str) -> McpServer | None:
    """A server of the environment or a global one, by id or by name (ignoring case)."""
    servers = _visible(environment)
    try:
        return servers.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        pass
    # The environment's own server wins over a global one of the same name.
    own_first = F("environment_id").asc(nulls_last=True)
    return servers.filter(name__iexact=ref).order_by(own_first).first()
