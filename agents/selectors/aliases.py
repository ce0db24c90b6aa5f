"""Reads of version aliases: what names an alias, the aliases of an agent, their history."""

from __future__ import annotations

import re
import uuid

from django.db.models import QuerySet
from django.db.models.functions import Lower

from agents.models import ALIAS_PATTERN, RESERVED_ALIASES, Agent, AliasChange, VersionAlias

ALIAS_RULE = "1 to 50 characters: letters, digits, '-' and '_', starting with a letter"


def alias_name_problem(name: str) -> str | None:
    """Why `name` cannot name an alias, or None when it can."""
    if not re.fullmatch(ALIAS_PATTERN, name):
        return ALIAS_RULE
    if name.lower() in RESERVED_ALIASES:
        return f"'{name.lower()}' is reserved"
    if _is_uuid(name):
        return "must not be a version id (a uuid)"
    return None


def _is_uuid(ref: str) -> bool:
    try:
        uuid.UUID(ref)
    except ValueError:
        return False
    return True


def alias_list(*, agent: Agent) -> QuerySet[VersionAlias]:
    """The aliases of `agent` with the versions they point at, by name."""
    return (
        agent.aliases.select_related("version", "updated_by")
        .defer("version__config")
        .order_by(Lower("name"), "id")
    )


def alias_history(*, agent: Agent, name: str | None = None) -> QuerySet[AliasChange]:
    """Every change of the aliases of `agent` (of alias `name`, ignoring case), newest
    first."""
    changes = agent.alias_changes.select_related("from_version", "to_version", "changed_by")
    if name:
        changes = changes.filter(name__iexact=name)
    return changes.defer("from_version__config", "to_version__config").order_by(
        "-changed_at", "-id"
    )
