"""DELETE /v1/agents/{id}/aliases/{name} outside a test transaction."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.models import Agent, VersionAlias
from tests.support.aliases import history, put, url

# Committed, as on a real server; serialized rollback (and the module's reseed) keeps the
# flush after it from recreating content types that the next serialized test restores:
# a plain transactional test made 100 tests of the suite fail at set-up with a duplicate
# django_content_type key.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def test_delete_outside_a_test_transaction_answers_204_and_the_history_keeps_it(
    owner_client: APIClient,
    calc: Agent,
) -> None:
    """A request is not wrapped in the test's transaction here, as on a real server: the
    service holds the agent's row in a transaction of its own (it answered 500 without)."""
    put(owner_client, calc, "prod", 1)

    deleted = owner_client.delete(url(calc, "prod"))

    assert deleted.status_code == 204, deleted.content
    assert not VersionAlias.objects.filter(agent=calc).exists()
    assert history(owner_client, calc) == [("prod", 1, None, "owner"), ("prod", None, 1, "owner")]
