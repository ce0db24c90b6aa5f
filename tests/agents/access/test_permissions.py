"""Who may do what (agents/access/permissions.py): the actions a user holds on some
environment, directly or through a group, asked in one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from agents.access.permissions import Action, grant, held_on_some_environment
from tests.factories import UserFactory

ASKED = (Action.CREATE, Action.EDIT, Action.DELETE)


@pytest.mark.django_db
def test_the_actions_held_on_some_environment_directly_or_by_a_group(
    env: Any, other_env: Any, admin_user: Any, django_assert_num_queries: Any
) -> None:
    user = UserFactory(username="member")
    grant(user, Action.EDIT, env)
    team = Group.objects.create(name="team")
    team.user_set.add(user)
    grant(team, Action.DELETE, other_env)
    grant(user, Action.READ, env)  # not asked

    with django_assert_num_queries(1):
        held = held_on_some_environment(user, ASKED)

    assert held == {Action.EDIT, Action.DELETE}
    assert held_on_some_environment(UserFactory(username="nobody"), ASKED) == set()
    with django_assert_num_queries(0):
        assert held_on_some_environment(admin_user, ASKED) == set(ASKED)
