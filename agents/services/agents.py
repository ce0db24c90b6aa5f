"""Writes of agents: create (with version 1), rename or re-describe, soft delete, and the
row lock that versions and aliases take."""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agentbuilder.db import unique_violation
from agentbuilder.errors import Conflict, ErrorItem, Invalid, NotFound
from agentbuilder.users import User
from agents.access.permissions import Action, require_on_environment
from agents.audit.services import audit_record, created, diff, snapshot
from agents.models import NAME_PATTERN, Agent, AgentType, AgentVersion, Environment
from agents.schedules.services import schedules_delete_for_agent
from agents.services.config_check import config_validate

NAME_CONSTRAINT = "agent_name_ci_unique_per_environment"


# What an agent's records show of it (its config is in its versions).
AUDITED_FIELDS = ("name", "display_name", "description", "agent_type")

NAME_RULE = "1 to 100 characters: letters, digits, '-', '_' and '.'"


def _duplicate(name: str, environment: Environment) -> Conflict:
    return Conflict(f"Agent '{name}' already exists in environment '{environment.name}'")


def _check_fields(fields: dict[str, str]) -> None:
    errors = []
    if "name" in fields and not re.fullmatch(NAME_PATTERN, fields["name"]):
        errors.append(ErrorItem(("body", "name"), NAME_RULE))
    if len(fields.get("description", "")) > 200:
        errors.append(ErrorItem(("body", "description"), "at most 200 characters"))
    if len(fields.get("display_name", "")) > 200:
        errors.append(ErrorItem(("body", "displayName"), "at most 200 characters"))
    if errors:
        raise Invalid(errors)


@transaction.atomic
def agent_create(
    *,
    user: User,
    environment: Environment,
    name: str,
    agent_type: str,
    config: Any,
    description: str = "",
    display_name: str = "",
    version_label: str = "",
    notes: str = "",
) -> tuple[Agent, AgentVersion]:
    """Create an agent with its version 1. Raises PermissionDenied, Invalid or Conflict."""
    require_on_environment(user, environment, Action.CREATE)
    _check_fields({"name": name, "description": description, "display_name": display_name})
    if agent_type not in AgentType.values:
        raise Invalid.at(("body", "agentType"), f"must be one of {', '.join(AgentType.values)}")
    stored = config_validate(
        user=user,
        environment=environment,
        agent_type=agent_type,
        data=config,
        loc=("body", "config"),
    )
    agent = Agent(
        environment=environment,
        name=name,
        display_name=display_name,
        description=description,
        agent_type=agent_type,
        created_by=user,
        modified_by=user,
    )
    try:
        with transaction.atomic():
            agent.save()
    except IntegrityError as exc:
        if unique_violation(exc, NAME_CONSTRAINT):
            raise _duplicate(name, environment) from None
        raise
    version = AgentVersion.objects.create(
        agent=agent,
        number=1,
        version_label=version_label,
        notes=notes,
        config=stored,
        config_as_written=config,
        created_by=user,
    )
    audit_record(
        user=user,
        action="create",
        obj=agent,
        environment=environment,
        changes=created(snapshot(agent, AUDITED_FIELDS)),
    )
    audit_version_created(user, version, environment)
    return agent, version


@transaction.atomic
def agent_update(*, user: User, agent: Agent, changes: dict[str, str]) -> Agent:
    """Rename or re-describe an agent (EDIT already checked by the selector)."""
    _check_fields(changes)
    before = snapshot(agent, changes)
    for field, value in changes.items():
        setattr(agent, field, value)
    agent.modified_by = user
    try:
        with transaction.atomic():
            agent.save(update_fields=[*changes, "modified_by", "modified_at"])
    except IntegrityError as exc:
        if unique_violation(exc, NAME_CONSTRAINT):
            raise _duplicate(agent.name, agent.environment) from None
        raise
    changed = diff(before, snapshot(agent, changes))
    if changed:
        audit_record(
            user=user,
            action="update",
            obj=agent,
            environment=agent.environment,
            changes=changed,
        )
    return agent


@transaction.atomic
def agent_delete(*, user: User, agent: Agent) -> None:
    """Soft delete: the agent disappears and its name is free; versions and runs stay, its
    schedules go."""
    schedules_delete_for_agent(agent=agent)
    now = timezone.now()
    deleted = Agent.objects.filter(pk=agent.pk, deleted_at__isnull=True).update(
        deleted_at=now, modified_at=now, modified_by=user
    )
    if deleted:
        audit_record(user=user, action="delete", obj=agent, environment=agent.environment)


def audit_version_created(user: User, version: AgentVersion, environment: Environment) -> None:
    """The record of a new version: its number, label and notes (the config is the version's
    own, kept immutable; docs/api.md#audit-log)."""
    audit_record(
        user=user,
        action="create",
        obj=version,
        object_type="version",
        environment=environment,
        changes=created(snapshot(version, ("agent", "number", "version_label", "notes"))),
    )


def agent_locked(agent: Agent) -> Agent:
    """`agent`'s row, locked until the transaction ends. Raises NotFound if it was deleted."""
    # Writes to an agent's versions and aliases hold its row: concurrent calls take turns,
    # so versions are numbered without gaps and each alias change records the version the
    # previous one left.
    locked = Agent.objects.select_for_update().get(pk=agent.pk)
    if locked.deleted_at is not None:
        raise NotFound(f"Agent '{agent.pk}' not found.")
    return locked
