"""The groups claim mapped to Django groups, and the user names single sign-on makes."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction

from agentbuilder.users import User
from agents.access.sso.services import claimed_groups, groups_sync, sso_login, username_for
from agents.models import AuditRecord, SsoIdentity
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


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_first_logins_at_once_make_one_user_per_account_and_distinct_names() -> None:
    # Eight first logins at once: four of one account, four of others who all ask for the
    # same name. Each runs in its own thread, so its own connection and transaction.
    issuer = "http://127.0.0.1:9/"  # never contacted: sso_login only reads the claims
    claims = [{"sub": "same", "preferred_username": "sam"}] * 4 + [
        {"sub": f"other-{n}", "preferred_username": "sam"} for n in range(4)
    ]
    start = threading.Barrier(len(claims))

    def login(claim: dict[str, Any]) -> int:
        start.wait()
        try:
            return sso_login(issuer=issuer, claims=claim, groups_claim="groups").pk
        finally:
            connection.close()

    with ThreadPoolExecutor(len(claims)) as pool:
        users = list(pool.map(login, claims))

    assert len(set(users[:4])) == 1  # one account, one user
    assert len(set(users)) == 5
    names = sorted(User.objects.filter(pk__in=users).values_list("username", flat=True))
    assert names == ["sam", "sam-2", "sam-3", "sam-4", "sam-5"]
    assert SsoIdentity.objects.count() == 5
