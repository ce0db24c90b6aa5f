"""Grants and revocations of object permissions (django-guardian) made by someone: each one
written with guardian and kept in the audit log in the same transaction. `permissions.grant`
stays the bare write for set-ups no one made (tests, fixtures)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group
from django.db import transaction
from guardian.shortcuts import assign_perm, get_group_perms, get_user_perms, remove_perm

from agentbuilder.users import User
from agents.audit.services import audit_record
from agents.models import Agent, Environment

Holder = User | Group
Target = Agent | Environment


@transaction.atomic
def permission_grant(*, user: User | None, holder: Holder, codename: str, target: Target) -> None:
    """Give `holder` (a user or a group) `codename` on `target`, recorded as `user`'s."""
    assign_perm(codename, holder, target)
    _record(user, "permission.grant", holder, codename, target)


@transaction.atomic
def permission_revoke(*, user: User | None, holder: Holder, codename: str, target: Target) -> None:
    """Take `codename` on `target` from `holder`, recorded as `user`'s."""
    remove_perm(codename, holder, target)
    _record(user, "permission.revoke", holder, codename, target)


@transaction.atomic
def permissions_set(
    *, user: User | None, holder: Holder, target: Target, codenames: Iterable[str]
) -> None:
    """Make `holder`'s permissions on `target` exactly `codenames`: a record a change."""
    held = set(
        get_group_perms(holder, target)
        if isinstance(holder, Group)
        else get_user_perms(holder, target)
    )
    wanted = set(codenames)
    for codename in sorted(held - wanted):
        permission_revoke(user=user, holder=holder, codename=codename, target=target)
    for codename in sorted(wanted - held):
        permission_grant(user=user, holder=holder, codename=codename, target=target)


def _record(user: User | None, action: str, holder: Holder, codename: str, target: Target) -> None:
    # A grant is a row of guardian's (permission, holder, object): granted, its fields come
    # from nothing; revoked, they go to nothing.
    kind = "group" if isinstance(holder, Group) else "user"
    name = holder.name if isinstance(holder, Group) else holder.get_username()
    target_type = target._meta.model_name or ""
    fields = {
        "permission": codename,
        kind: name,
        f"{kind}Id": holder.pk,
        "objectType": target_type,
    }
    granted = action == "permission.grant"
    audit_record(
        user=user,
        action=action,
        obj=target,
        object_type="permission",
        object_repr=f"{codename} of {kind} '{name}' on {target_type} '{target}'",
        environment=target if isinstance(target, Environment) else target.environment,
        changes={
            k: {"from": None, "to": v} if granted else {"from": v, "to": None}
            for k, v in fields.items()
        },
    )
