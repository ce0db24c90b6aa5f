"""Reads of versions: what a version reference names (`latest`, a number, an id, an alias)
and the versions of an agent."""

from __future__ import annotations

import functools
import uuid

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from agentbuilder.errors import Invalid, NotFound
from agents.models import Agent, AgentVersion, VersionAlias
from agents.selectors.aliases import alias_name_problem

# A version reference, parsed: None for `latest`, a number, a version's id, an alias's name.
VersionRef = uuid.UUID | int | str | None


def version_ref_parse(ref: str) -> VersionRef:
    """`latest` (None), a version number, a version uuid, or an alias name (returned as
    given); raises Invalid otherwise."""
    if ref == "latest":
        return None
    if ref.isascii() and ref.isdigit():
        number = int(ref)
        if 1 <= number <= 2**31 - 1:
            return number
    else:
        try:
            return uuid.UUID(ref)
        except ValueError:
            if alias_name_problem(ref) is None:
                return ref
    raise Invalid.at(
        ("path", "versionId"),
        "must be 'latest', a version number (1, 2, …), a version id or an alias name",
    )


def version_kind(parsed: VersionRef) -> str:
    """Which of `version_where`'s conditions a parsed reference takes."""
    if parsed is None:
        return "latest"
    if isinstance(parsed, int):
        return "number"
    return "id" if isinstance(parsed, uuid.UUID) else "alias"


def version_where(kind: str, *, agent: str, ref: str) -> str:
    """How a reference names a version, written once for every reader: the condition on
    rows `v` of the versions table that leaves, first, the version of agent `agent` (SQL)
    that a reference of `kind` with value `ref` (SQL) names: the newest, by number, by id,
    or by alias (ignoring case)."""
    aliases = connection.ops.quote_name(VersionAlias._meta.db_table)
    # The table's name from the model's metadata; `agent` and `ref` are placeholders.
    return {
        "latest": f"v.agent_id = {agent} ORDER BY v.number DESC",
        "number": f"v.agent_id = {agent} AND v.number = {ref}",
        "id": f"v.agent_id = {agent} AND v.id = {ref}",
        "alias": f"v.id = (SELECT al.version_id FROM {aliases} al"  # noqa: S608
        f" WHERE al.agent_id = {agent} AND lower(al.name) = lower({ref}))",
    }[kind]


def version_get(*, agent: Agent, ref: str) -> AgentVersion:
    """A version of `agent` by `latest`, number, uuid or alias, with its author; raises
    NotFound or Invalid."""
    parsed = version_ref_parse(ref)
    kind = version_kind(parsed)
    params = [agent.pk] if parsed is None else [agent.pk, parsed]
    # `version_where`'s condition, so the API reads the version the invoke path runs; every
    # value is a parameter.
    named = RawSQL(_version_id_sql(kind), params)  # noqa: S611
    version = agent.versions.select_related("created_by").filter(pk=named).first()
    if version is None:
        what = "Alias" if kind == "alias" else "Version"
        raise NotFound(f"{what} '{ref}' of agent '{agent.name}' not found.")
    return version


@functools.cache
def _version_id_sql(kind: str) -> str:
    versions = connection.ops.quote_name(AgentVersion._meta.db_table)
    where = version_where(kind, agent="%s", ref="%s")
    # The table's name from the model's metadata; every value is a parameter.
    return f"SELECT v.id FROM {versions} v WHERE {where} LIMIT 1"  # noqa: S608


def version_get_by_label(*, agent: Agent, label: str | None) -> AgentVersion:
    if not label:
        return version_get(agent=agent, ref="latest")
    version = agent.versions.select_related("created_by").filter(version_label=label).first()
    if version is None:
        raise NotFound(f"Version labelled '{label}' of agent '{agent.name}' not found.")
    return version


def version_list(*, agent: Agent) -> QuerySet[AgentVersion]:
    return agent.versions.select_related("created_by").defer("config").order_by("-number")


def latest_versions(*, agent_ids: list[uuid.UUID]) -> dict[uuid.UUID, AgentVersion]:
    """The latest version of each agent, in one query (DISTINCT ON)."""
    rows = (
        AgentVersion.objects.filter(agent_id__in=agent_ids)
        .select_related("created_by")
        .order_by("agent_id", "-number")
        .distinct("agent_id")
    )
    return {v.agent_id: v for v in rows}
