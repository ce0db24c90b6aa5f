"""Writes of versions: the next version of an agent, numbered without gaps."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from agentbuilder.db import unique_violation
from agentbuilder.errors import Conflict, Invalid, Loc
from agentbuilder.users import User
from agents.models import Agent, AgentVersion
from agents.services.agents import agent_locked, audit_version_created
from agents.services.config_check import config_validate


@transaction.atomic
def version_add(
    *,
    user: User,
    agent: Agent,
    config: Any | None,
    version_label: str = "",
    notes: str = "",
    loc: Loc = ("body", "config"),
) -> AgentVersion:
    """Append the next version (no config: a copy of the latest). Raises Invalid, Conflict.

    The config is kept twice: validated with its defaults (what runs read) and as written
    (what people read: docs/api.md#configs).

    The agent row is locked first, so concurrent calls are numbered 1, 2, 3 … without gaps.
    """
    locked = agent_locked(agent)
    latest = locked.versions.order_by("-number").first()
    if config is None:
        if latest is None:  # pragma: no cover - every agent is created with version 1
            raise Invalid.at(loc, "the agent has no version to copy: give a config")
        stored, written = latest.config, latest.config_as_written
    else:
        stored = config_validate(
            user=user,
            environment=locked.environment,
            agent_type=locked.agent_type,
            data=config,
            loc=loc,
        )
        written = config
    number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    try:
        with transaction.atomic():
            version = AgentVersion.objects.create(
                agent=locked,
                number=number,
                version_label=version_label,
                notes=notes,
                config=stored,
                config_as_written=written,
                created_by=user,
            )
    except IntegrityError as exc:
        if unique_violation(exc, "version_label_unique"):
            raise Conflict(
                f"Agent '{locked.name}' already has a version labelled '{version_label}'"
            ) from None
        raise
    Agent.objects.filter(pk=locked.pk).update(modified_at=timezone.now(), modified_by=user)
    audit_version_created(user, version, locked.environment)
    return version
