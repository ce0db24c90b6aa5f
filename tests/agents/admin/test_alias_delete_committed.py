"""The admin's alias delete outside a test transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.models import AliasChange, VersionAlias
from tests.support.admin import post

# Committed, as on a real server; serialized rollback (and the module's reseed) keeps the
# flush after it from recreating content types that the next serialized test restores:
# a plain transactional test made 100 tests of the suite fail at set-up with a duplicate
# django_content_type key.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def test_delete_outside_a_test_transaction_removes_it_and_keeps_it_in_the_history(
    client: Client,
    admin_user: Any,
    calc: Any,
) -> None:
    """The admin's request is not wrapped in the test's transaction here, as on a real
    server (the delete answered 500 when the service took its lock outside one)."""
    client.force_login(admin_user)
    post(client, calc, action="promote", name="prod", version=2)

    page = post(client, calc, action="delete", name="prod")

    assert page.status_code == 200
    assert "Alias &#x27;prod&#x27; deleted." in page.content.decode()
    assert not VersionAlias.objects.filter(agent=calc).exists()
    changes = [
        (c.from_version.number if c.from_version else None, c.to_version)
        for c in AliasChange.objects.filter(agent=calc).order_by("changed_at", "id")
    ]
    assert changes == [(None, calc.versions.get(number=2)), (2, None)]
