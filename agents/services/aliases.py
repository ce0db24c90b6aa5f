"""Writes of version aliases: set or move one, roll it back, delete it; each change
recorded."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agentbuilder.errors import Conflict, Invalid, Loc, NotFound
from agentbuilder.users import User
from agents.audit.services import audit_record
from agents.models import Agent, AliasChange, AliasGate, Experiment, VersionAlias
from agents.selectors.aliases import alias_name_problem
from agents.services.agents import agent_locked


def _alias_name(name: str, loc: Loc) -> None:
    problem = alias_name_problem(name)
    if problem:
        raise Invalid.at(loc, problem)


@transaction.atomic
def alias_set(
    *,
    user: User,
    agent: Agent,
    name: str,
    version_number: int,
    name_loc: Loc = ("path", "name"),
    version_loc: Loc = ("body", "version"),
    allowed_by: Experiment | None = None,
    forced_reason: str = "",
    ungated: bool = False,
) -> VersionAlias:
    """Point alias `name` of `agent` at its version `version_number`, creating or moving
    it, and record the change (none when it already points there). A gated alias moves
    only with the experiment that passed its gate (`allowed_by`, agents.evals.gates), a
    forced move's reason, or `ungated` (a roll-back, to where it pointed before). Raises
    Invalid (the name at `name_loc`, an unknown version at `version_loc`), NotFound or
    Conflict (gated)."""
    _alias_name(name, name_loc)
    locked = agent_locked(agent)
    version = locked.versions.filter(number=version_number).defer("config").first()
    if version is None:
        raise Invalid.at(version_loc, f"agent '{locked.name}' has no version {version_number}")
    aliases = locked.aliases.select_related("version").defer("version__config")
    alias = aliases.filter(name__iexact=name).first()
    before = alias.version if alias else None
    if alias is not None and before == version:
        return alias
    gated = AliasGate.objects.filter(agent=locked, name__iexact=name).exists()
    allowed = allowed_by is not None and allowed_by.version_id == version.pk
    if gated and not (allowed or forced_reason or ungated):
        raise Conflict(
            f"Alias '{name}' is gated: move it through its gate (PUT "
            f"/v1/agents/{locked.pk}/aliases/{name} runs it), or force the move with a reason."
        )
    now = timezone.now()
    if alias is None:
        alias = VersionAlias(agent=locked, name=name)
    alias.version, alias.updated_at, alias.updated_by = version, now, user
    alias.save()
    AliasChange.objects.create(
        agent=locked,
        name=alias.name,
        from_version=before,
        to_version=version,
        changed_at=now,
        changed_by=user,
        experiment=allowed_by if gated else None,
        forced_reason=forced_reason,
    )
    changes: dict[str, dict[str, object]] = {
        "version": {"from": before.number if before else None, "to": version.number}
    }
    if forced_reason:
        changes["forced_reason"] = {"from": None, "to": forced_reason}
    if gated and allowed_by is not None:  # the experiment that passed the gate
        changes["experiment"] = {"from": None, "to": str(allowed_by.pk)}
    audit_record(
        user=user,
        action="alias.set",
        obj=alias,
        object_type="alias",
        environment=locked.environment,
        changes=changes,
    )
    return alias


@transaction.atomic
def alias_roll_back(
    *, user: User, agent: Agent, name: str, name_loc: Loc = ("path", "name")
) -> VersionAlias:
    """Point alias `name` back at the version it pointed at before its last change, and
    record that as a change of its own. Raises NotFound, or Invalid when the alias has no
    earlier version (it was just created)."""
    _alias_name(name, name_loc)
    locked = agent_locked(agent)
    alias = locked.aliases.filter(name__iexact=name).first()
    if alias is None:
        raise NotFound(f"Alias '{name}' of agent '{locked.name}' not found.")
    last = (
        locked.alias_changes.filter(name__iexact=name, to_version_id=alias.version_id)
        .select_related("from_version")
        .order_by("-changed_at", "-id")
        .first()
    )
    if last is None or last.from_version is None:
        raise Invalid.at(name_loc, f"alias '{alias.name}' has no earlier version to go back to")
    # Not gated: the way back when a version that passed the gate misbehaves in use.
    return alias_set(
        user=user,
        agent=locked,
        name=alias.name,
        version_number=last.from_version.number,
        name_loc=name_loc,
        ungated=True,
    )


@transaction.atomic
def alias_delete(*, user: User, agent: Agent, name: str, name_loc: Loc = ("path", "name")) -> None:
    """Delete alias `name` of `agent` and record it. Raises Invalid or NotFound."""
    _alias_name(name, name_loc)
    locked = agent_locked(agent)
    alias = locked.aliases.filter(name__iexact=name).first()
    if alias is None:
        raise NotFound(f"Alias '{name}' of agent '{locked.name}' not found.")
    alias_id, number = alias.pk, alias.version.number
    alias.delete()
    AliasChange.objects.create(
        agent=locked,
        name=alias.name,
        from_version_id=alias.version_id,
        to_version=None,
        changed_by=user,
    )
    alias.pk = alias_id  # the record names the row that went
    audit_record(
        user=user,
        action="alias.delete",
        obj=alias,
        object_type="alias",
        environment=locked.environment,
        changes={"version": {"from": number, "to": None}},
    )
