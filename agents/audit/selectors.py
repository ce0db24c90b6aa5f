"""Reads of the audit log: an environment's records, for AUDIT holders on it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from agentbuilder.users import User
from agents.access.permissions import Action, environments_with, require_on_environment
from agents.models import AuditRecord, Environment


@dataclass(frozen=True)
class AuditFilter:
    object_type: str | None = None
    object_id: str | None = None
    actor_id: int | None = None
    action: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


def audit_list(
    *, user: User, environment: Environment, where: AuditFilter
) -> QuerySet[AuditRecord]:
    """`environment`'s records, newest first. Raises PermissionDenied (no AUDIT on it)."""
    require_on_environment(user, environment, Action.AUDIT)
    records = AuditRecord.objects.filter(environment_id=environment.pk)
    if where.object_type is not None:
        records = records.filter(object_type=where.object_type)
    if where.object_id is not None:
        records = records.filter(object_id=where.object_id)
    if where.actor_id is not None:
        records = records.filter(actor_id=where.actor_id)
    if where.action is not None:
        records = records.filter(action=where.action)
    if where.since is not None:
        records = records.filter(at__gte=where.since)
    if where.until is not None:
        records = records.filter(at__lt=where.until)
    return records.order_by("-at", "-id")


def audited_environments(user: User) -> QuerySet[Environment]:
    """The environments whose records `user` may read (the admin's page)."""
    return environments_with(user, Action.AUDIT)
