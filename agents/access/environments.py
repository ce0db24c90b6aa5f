"""Environments: the one a request acts in and the ones a caller sees.

An environment is a tenant: agents, API clients, documents, guardrails and MCP servers
belong to one, and a permission held on it holds for everything in it
(agents.access.permissions)."""

from __future__ import annotations

import re
import uuid

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from agentbuilder.db import unique_violation
from agentbuilder.errors import Conflict, ErrorItem, Invalid, NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.grants import permission_grant
from agents.access.permissions import Action, environments_visible
from agents.audit.services import audit_record, created, snapshot
from agents.models import NAME_PATTERN, Environment

DEFAULT_ENVIRONMENT = "default"
# Creating an environment is the catalog-wide permission the admin's "add" asks for too.
CREATE_PERMISSION = "agents.add_environment"
NAME_CONSTRAINT = "environment_name_ci_unique"


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


@transaction.atomic
def environment_create(*, user: User, name: str, description: str = "") -> Environment:
    """A new environment. Its creator, unless a superuser, is granted every action on it, or
    it could not see what it made. Raises PermissionDenied, Invalid or Conflict."""
    if not user.has_perm(CREATE_PERMISSION):
        raise PermissionDenied(
            f"Creating an environment needs the permission '{CREATE_PERMISSION}'."
        )
    _check(name, description)
    env = Environment(name=name, description=description)
    try:
        with transaction.atomic():
            env.save()
    except IntegrityError as exc:
        if unique_violation(exc, NAME_CONSTRAINT):
            raise Conflict(f"Environment '{name}' already exists.") from None
        raise
    audit_record(
        user=user,
        action="create",
        obj=env,
        environment=env,
        changes=created(snapshot(env, ("name", "description"))),
    )
    if not user.is_superuser:
        for action in Action:
            permission_grant(user=user, holder=user, codename=action.value, target=env)
    return env


def _check(name: str, description: str) -> None:
    errors = []
    if not re.fullmatch(NAME_PATTERN, name):
        errors.append(
            ErrorItem(("body", "name"), "1 to 100 characters: letters, digits, '-', '_' and '.'")
        )
    elif _is_uuid(name):
        # X-Environment takes a name or an id: a name that reads as an id would never be found.
        errors.append(ErrorItem(("body", "name"), "must not be a UUID (ids name environments)"))
    if len(description) > 200:
        errors.append(ErrorItem(("body", "description"), "at most 200 characters"))
    if errors:
        raise Invalid(errors)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
