"""Writes of single sign-on: the user a provider's account signs in as, made at its first
login, and its groups, set from the claim at every login; each change in the audit log."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import Group
from django.db import connection, transaction

from agentbuilder.users import User
from agents.audit.services import audit_record, created, diff, snapshot
from agents.models import SsoIdentity

USERNAME_MAX = 150  # Django's User.username
# Django's username validator allows letters, digits and @.+-_; anything else is dropped.
NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")
PROFILE = ("email", "first_name", "last_name")
USER_FIELDS = ("username", *PROFILE, "is_staff", "is_superuser")
# The advisory lock that first logins take (any number no other lock of the project uses).
FIRST_LOGIN_LOCK = 0x5_50_10_61


@transaction.atomic
def sso_login(*, issuer: str, claims: Mapping[str, Any], groups_claim: str) -> User:
    """The user `claims` sign in as (made staff at the first login, never superuser), its
    profile and groups brought up to date with them. Raises KeyError without `sub`."""
    subject = str(claims["sub"])
    identity = (
        SsoIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        # First logins wait for each other (they are rare): two at once for one account
        # would both make it, and two new accounts asking for one name would both pick it;
        # either way the second insert would break a unique constraint. The lock is held
        # to the end of this transaction, after which the next one sees the new rows.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FIRST_LOGIN_LOCK])
        identity = (
            SsoIdentity.objects.select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
    if identity is None:
        user = _user_create(issuer=issuer, subject=subject, claims=claims)
    else:
        user = identity.user
        _profile_update(user, claims)
    groups_sync(user=user, names=claimed_groups(claims, groups_claim))
    return user


def _user_create(*, issuer: str, subject: str, claims: Mapping[str, Any]) -> User:
    # An unusable password: this user signs in at the provider only. Staff, so the admin
    # lets them in; what they may see there is what their groups are granted.
    user = User.objects.create_user(
        username_for(claims), **_profile(claims), password=None, is_staff=True
    )
    SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    audit_record(
        user=user,
        action="create",
        obj=user,
        environment=None,
        changes=created(snapshot(user, USER_FIELDS)),
        object_type="user",
    )
    return user


def _profile_update(user: User, claims: Mapping[str, Any]) -> None:
    before = snapshot(user, PROFILE)
    changes = diff(before, {**before, **_profile(claims)})
    if not changes:
        return
    for field, change in changes.items():
        setattr(user, field, change["to"])
    user.save(update_fields=list(changes))
    audit_record(
        user=user, action="update", obj=user, environment=None, changes=changes, object_type="user"
    )


def _profile(claims: Mapping[str, Any]) -> dict[str, str]:
    """The profile fields the claims give (a missing one left as it is)."""
    given = {"email": "email", "first_name": "given_name", "last_name": "family_name"}
    return {
        field: value[:150]
        for field, claim in given.items()
        if isinstance(value := claims.get(claim), str) and value
    }


def username_for(claims: Mapping[str, Any]) -> str:
    """A user name no one has yet, from `preferred_username`, else the email, else `sub`:
    `alice`, or `alice-2` when `alice` is taken (a local user is never taken over)."""
    base = ""
    for claim in ("preferred_username", "email", "sub"):
        value = claims.get(claim)
        if isinstance(value, str) and (base := NOT_IN_USERNAME.sub("", value)):
            break
    base = base[: USERNAME_MAX - 8] or "sso-user"
    taken = {
        name.lower()
        for name in User.objects.filter(username__istartswith=base).values_list(
            "username", flat=True
        )
    }
    candidate, n = base, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def claimed_groups(claims: Mapping[str, Any], claim: str) -> list[str]:
    """The group names the claim holds: a list of strings or one string; anything else, or
    no claim, is no group (a provider that stops sending one takes the groups away)."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def groups_sync(*, user: User, names: list[str]) -> None:
    """Make `user`'s groups the existing Django groups among `names`; names no group has
    are left out (an administrator makes the group and grants it permissions)."""
    wanted = set(Group.objects.filter(name__in=names))
    current = set(user.groups.all())
    if wanted == current:
        return
    user.groups.remove(*(current - wanted))
    user.groups.add(*(wanted - current))
    audit_record(
        user=user,
        action="update",
        obj=user,
        environment=None,
        changes={
            "groups": {
                "from": sorted(g.name for g in current),
                "to": sorted(g.name for g in wanted),
            }
        },
        object_type="user",
    )
