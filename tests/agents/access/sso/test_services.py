"""The groups claim mapped to Django groups, and the user names single sign-on makes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import transaction

from agents.access.sso.services import claimed_groups, groups_sync, username_for
from agents.models import AuditRecord
from tests.factories import UserFactory


@pytest.mark.parametrize(
    ("claims", "names"),
    [
        ({"groups": ["a", "b"]}, ["a", "b"]),
        ({"groups": "a"}, ["a"]),
        ({"groups": ["a", 3, None, {"x": 1}]}, ["a"]),
        ({"groups": {"a": True}}, []),
        ({}, []),  # no claim: no group (a provider that stops sending it takes them away)
    ],
)
def test_the_claim_gives_group_names(claims: dict[str, Any], names: list[str]) -> None:
    assert claimed_groups(claims, "groups") == names


def test_groups_are_added_and_removed_to_match_the_existing_groups_named(db: Any) -> None:
    kept, dropped, added = (Group.objects.create(name=n) for n in ("kept", "dropped", "added"))
    user = UserFactory(username="sam")
    user.groups.add(kept, dropped)

    with transaction.atomic():
        groups_sync(user=user, names=["kept", "added", "unknown"])

    assert set(user.groups.all()) == {kept, added}
    assert not Group.objects.filter(name="unknown").exists()
    (record,) = AuditRecord.objects.all()
    assert (record.actor, record.action, record.object_type) == (user, "update", "user")
    assert record.changes == {"groups": {"from": ["dropped", "kept"], "to": ["added", "kept"]}}


def test_unchanged_groups_write_no_record(db: Any) -> None:
    user = UserFactory(username="sam")
    user.groups.add(Group.objects.create(name="kept"))

    with transaction.atomic():
        groups_sync(user=user, names=["kept"])

    assert not AuditRecord.objects.exists()


def test_user_names_come_from_the_claims_and_never_clash(db: Any) -> None:
    UserFactory(username="Bob")
    UserFactory(username="bob-2")

    assert username_for({"preferred_username": "bob", "sub": "1"}) == "bob-3"
    assert username_for({"email": "eve@example.com", "sub": "2"}) == "eve@example.com"
    assert username_for({"preferred_username": "j doe/x", "sub": "3"}) == "jdoex"
    assert username_for({"preferred_username": "!!!", "sub": "a|b"}) == "ab"
    assert username_for({"sub": "   "}) == "sso-user"
    assert len(username_for({"preferred_username": "x" * 400, "sub": "4"})) <= 150
