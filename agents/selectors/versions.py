"""Reads of versions: what a version reference names (`latest`, a number, an id, an alias)
and the versions of an agent."""

from __future__ import annotations

import uuid

from django.db import connection
from django.db.models import QuerySet

from agentbuilder.errors import Invalid, NotFound
from agents.models import Agent, AgentVersion, VersionAlias
from agents.selectors.aliases import alias_name_problem


def version_ref_parse(ref: str) -> uuid.UUID | int | str | None:
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


def version_where(kind: str, *, agent: str, ref: str) -> str:
    """Which version of agent `agent` (SQL) a reference of `kind` names (`ref`, SQL): the
    newest, by number, by id, or by alias (ignoring case)."""
    aliases = connection.ops.quote_name(VersionAlias._meta.db_table)
    # The table's name from the model's metadata; `agent` and `ref` are placeholders.
    return {
        "latest": f"v.agent_id = {agent} ORDER BY v.number DESC",
        "int": f"v.agent_id = {agent} AND v.number = {ref}",
        "UUID": f"v.agent_id = {agent} AND v.id = {ref}",
        "str": f"v.id = (SELECT al.version_id FROM {aliases} al"  # noqa: S608
        f" WHERE al.agent_id = {agent} AND lower(al.name) = lower({ref}))",
    }[kind]


def version_get(*, agent: Agent, ref: str) -> AgentVersion:
    """A version of `agent` by `latest`, number, uuid or alias; raises NotFound or
    Invalid."""
    parsed = version_ref_parse(ref)
    versions = agent.versions.select_related("created_by")
    what = "Version"
    if parsed is None:
        version = versions.order_by("-number").first()
    elif isinstance(parsed, int):
        version = versions.filter(number=parsed).first()
    elif isinstance(parsed, str):
        version = versions.filter(aliases__agent=agent, aliases__name__iexact=parsed).first()
        what = "Alias"
    else:
        version = versions.filter(pk=parsed).first()
    if version is None:
        raise NotFound(f"{what} '{ref}' of agent '{agent.name}' not found.")
    return version


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
