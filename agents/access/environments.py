"""Environments: the one a request acts in and the ones a caller sees.

An environment is a tenant: agents, API clients, documents, guardrails and MCP servers
belong to one, and a permission held on it holds for everything in it
(agents.access.permissions)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from agentbuilder.errors import NotFound
from agentbuilder.users import User
from agents.access.permissions import environments_visible
from agents.models import Environment

DEFAULT_ENVIRONMENT = "default"


def environment_resolve(*, user: User, claim: str | None, header: str | None) -> Environment:
    """The request's environment: the token's claim, else the header (name or id), else
    `default`. Raises NotFound for an environment the caller cannot see."""
    if not header or claim:
        # Read with the token's holder (agents.access.tokens.token_holder): no query of its own.
        known = getattr(user, "token_environment", None)
        if known is not None:
            return known
    if claim:
        env = Environment.objects.filter(pk=claim).first()
        if env is None:
            raise NotFound("The token's environment no longer exists.")
        return env
    if header:
        visible = environments_visible(user)
        env = _by_name_or_id(visible, header.strip())
        if env is None:
            raise NotFound(f"Environment '{header.strip()}' not found.")
        return env
    return _default()


def _default() -> Environment:
    env = Environment.objects.filter(name=DEFAULT_ENVIRONMENT).first()
    if env is None:
        raise NotFound(f"Environment '{DEFAULT_ENVIRONMENT}' not found.")
    return env


def _by_name_or_id(envs: QuerySet[Environment], ref: str) -> Environment | None:
    try:
        return envs.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        return envs.filter(name__iexact=ref).first()


def environment_list(*, user: User) -> QuerySet[Environment]:
    return environments_visible(user).order_by("name")


def environment_public(*, reference: str | None) -> Environment:
    """The environment `reference` (name or id) names, else `default`, whoever asks: for
    what the operator made public (A2A_PUBLIC_CARDS). Raises NotFound."""
    if reference and reference.strip():
        env = _by_name_or_id(Environment.objects.all(), reference.strip())
        if env is None:
            raise NotFound(f"Environment '{reference.strip()}' not found.")
        return env
    return _default()
