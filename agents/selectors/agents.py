"""Reads of agents: lists and single agents narrowed to what the caller may see, and the
invoke routes' permission check."""

from __future__ import annotations

import uuid
from collections.abc import Set as AbstractSet

from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Lower

from agentbuilder.errors import NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import (
    Action,
    AgentHeld,
    agent_with_held,
    agent_with_held_by_name,
    agents_with,
    may,
    may_flag,
)
from agents.models import Agent, AgentVersion, Environment

SEEN_TO_INVOKE = {Action.READ, Action.INVOKE}


def _with_current_version(agents: QuerySet[Agent]) -> QuerySet[Agent]:
    latest = AgentVersion.objects.filter(agent=OuterRef("pk")).order_by("-number")
    return agents.select_related("created_by", "modified_by").annotate(
        current_version_id=Subquery(latest.values("id")[:1])
    )


def agent_list(
    *, user: User, environment: Environment, agent_type: str | None = None, name: str | None = None
) -> QuerySet[Agent]:
    """Agents of `environment` the caller can READ, filtered by type and name substring."""
    agents = agents_with(user, Action.READ).filter(environment=environment)
    if agent_type:
        agents = agents.filter(agent_type=agent_type)
    if name:
        agents = agents.filter(name__icontains=name)
    return _with_current_version(agents).order_by("name", "id")


def agent_list_invocable(*, user: User, environment: Environment) -> QuerySet[Agent]:
    """Agents of `environment` the caller may INVOKE, by name: the OpenAI base's models."""
    return (
        agents_with(user, Action.INVOKE)
        .filter(environment=environment)
        .select_related("environment")
        .order_by("name", "id")
    )


def agent_get(
    *, user: User, environment: Environment, agent_id: uuid.UUID, action: Action = Action.READ
) -> Agent:
    """One live agent of `environment`. Raises NotFound if the caller cannot READ it and
    PermissionDenied if it can READ it but not perform `action`."""
    return _visible_one(user, action, environment, Q(pk=agent_id), f"Agent '{agent_id}'")


def agent_get_to_invoke(*, user: User, environment: Environment, agent_id: uuid.UUID) -> Agent:
    """`agent_get(action=INVOKE)` for the invoke routes, from one precompiled statement:
    NotFound unless the caller may READ or INVOKE the live agent in `environment`,
    PermissionDenied if it may READ it but not INVOKE it (docs/api.md#permissions)."""
    found = agent_with_held(user, agent_id)
    in_environment = found is not None and found.agent.environment_id == environment.pk
    held = None if found is None else found.held
    invocable_check(held, in_environment=in_environment, what=f"Agent '{agent_id}'")
    assert found is not None  # invocable_check refused a missing agent
    agent = found.agent
    agent.environment = environment  # the caller's, already read: no query for it
    return agent


def invocable_check(held: AbstractSet[str] | None, *, in_environment: bool, what: str) -> None:
    """Nothing if a caller holding `held` on the live agent `what` names (None: there is no
    such agent) may INVOKE it in the request's environment. Raises NotFound when it may
    neither READ nor INVOKE it or the agent is in another environment, PermissionDenied
    when it may only READ it."""
    if held is None or not in_environment or not held & SEEN_TO_INVOKE:
        raise NotFound(f"{what} not found.")
    if Action.INVOKE not in held:
        raise PermissionDenied(f"You do not have {Action.INVOKE.name} permission on this agent.")


def agent_get_invocable(*, user: User, agent_id: uuid.UUID) -> Agent:
    """A live agent, in whichever environment, that `user` may INVOKE (the admin's
    playground finds it by id alone). Raises NotFound otherwise."""
    found = agent_with_held(user, agent_id)  # the invoke routes' own check
    if found is None or Action.INVOKE not in found.held:
        raise NotFound(f"Agent '{agent_id}' not found.")
    return found.agent


def agent_seen_by_name(*, user: User, environment: Environment, name: str) -> AgentHeld:
    """The live agent of `environment` that `name` names (ignoring case), with the Action
    codenames the caller holds on it, from the invoke routes' one statement: for a route
    that names its agent and needs it before the run (A2A, MCP), whose run start then
    takes these grants instead of reading them again (RunRequest.held). Raises NotFound
    unless the caller may READ or INVOKE it."""
    found = agent_with_held_by_name(user, environment.pk, name)
    if found is None or not found.held & SEEN_TO_INVOKE:
        raise NotFound(f"{named(name, environment)} not found.")
    found.agent.environment = environment  # the caller's, already read: no query for it
    return found


def named(name: str, environment: Environment) -> str:
    """How a refusal names the agent a name looks up."""
    return f"Agent '{name}' in environment '{environment.name}'"


def agent_get_by_name(
    *, user: User, environment: Environment, name: str, action: Action = Action.READ
) -> Agent:
    return _visible_one(
        user,
        action,
        environment,
        Q(name__iexact=name),
        named(name, environment),
    )


def agent_id_by_name(*, environment: Environment, name: str) -> uuid.UUID | None:
    """The id of the live agent of `environment` named `name` (ignoring case), whoever
    asks (A2A's public cards); a caller's own lookup is `agent_seen_by_name`."""
    agents = Agent.objects.alias(lower_name=Lower("name")).filter(
        environment=environment, lower_name=name.lower(), deleted_at__isnull=True
    )
    return agents.values_list("pk", flat=True).first()


def _visible_one(
    user: User, action: Action, environment: Environment, match: Q, what: str
) -> Agent:
    # One query: visibility (READ) filters, the permission asked for is a column. INVOKE
    # alone makes an agent visible to the invoke routes (docs/api.md#permissions): a service account
    # calls an agent without reading its config.
    seen_by = (Action.READ, Action.INVOKE) if action == Action.INVOKE else (Action.READ,)
    agents = Agent.objects.filter(may(user, *seen_by), deleted_at__isnull=True)
    agent = (
        _with_current_version(agents)
        .filter(match, environment=environment)
        .annotate(allowed=may_flag(user, action))
        .first()
    )
    if agent is None:
        raise NotFound(f"{what} not found.")
    if not agent.allowed:
        raise PermissionDenied(f"You do not have {action.name} permission on this agent.")
    return agent


def agents_by_ids(
    *, user: User, environment: Environment, agent_ids: list[uuid.UUID]
) -> dict[uuid.UUID, Agent]:
    agents = _with_current_version(agents_with(user, Action.READ)).filter(
        environment=environment, pk__in=agent_ids
    )
    return {a.pk: a for a in agents}


def agent_list_public(*, environment: Environment) -> QuerySet[Agent]:
    """Every live agent of `environment`, by name, whoever asks (A2A_PUBLIC_CARDS)."""
    return Agent.objects.filter(environment=environment, deleted_at__isnull=True).order_by(
        "name", "id"
    )
