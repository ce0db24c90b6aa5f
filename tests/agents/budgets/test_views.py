"""Budgets in the API (agents/budgets/views.py): made, listed, changed and removed with EDIT
on the environment, each shown with its period's spend; bad limits and scopes answered 400
at their path, a scope's object the caller cannot EDIT a 404, and nothing written by a
refused request."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action, grant
from agents.budgets.gate import charge
from agents.budgets.periods import period_start
from agents.budgets.selectors import budget_limits
from agents.models import Budget, Environment
from tests.conftest import client_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def body(**changes: Any) -> dict[str, Any]:
    return {"scope": {"environment": None}, "period": "day", "action": "block", **changes}


def test_the_owner_makes_lists_changes_and_removes_a_budget(
    owner_client: APIClient, make_agent: Any
) -> None:
    agent = make_agent()
    made = owner_client.post(
        "/v1/budgets",
        body(scope={"agent": str(agent.pk)}, limitUsd="2.5", description="calc per day"),
        format="json",
    )
    assert made.status_code == 201, made.json()
    budget = made.json()
    assert budget["scope"] == {"agent": str(agent.pk)}
    assert (budget["limitUsd"], budget["limitTokens"], budget["action"]) == (2.5, None, "block")
    assert budget["current"]["periodStart"] == period_start("day").isoformat()
    assert budget["current"]["spentUsd"] == 0
    assert budget["current"]["used"] == 0

    charge([budget_limits(Budget.objects.get())], Decimal("0.5"), 1200)
    listed = owner_client.get("/v1/budgets").json()["budgets"]
    assert [b["id"] for b in listed] == [budget["id"]]
    assert listed[0]["current"]["spentUsd"] == 0.5
    assert listed[0]["current"]["spentTokens"] == 1200
    assert listed[0]["current"]["used"] == 0.2

    changed = owner_client.patch(
        f"/v1/budgets/{budget['id']}",
        {"period": "month", "limitTokens": 1000, "limitUsd": None, "action": "warn"},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    shown = owner_client.get(f"/v1/budgets/{budget['id']}").json()
    assert (shown["period"], shown["limitUsd"], shown["limitTokens"]) == ("month", None, 1000)
    assert shown["current"]["periodStart"] == period_start("month").isoformat()
    assert shown["current"]["spentTokens"] == 0  # this month's row is another than today's

    assert owner_client.delete(f"/v1/budgets/{budget['id']}").status_code == 204
    assert owner_client.get(f"/v1/budgets/{budget['id']}").status_code == 404
    assert not Budget.objects.exists()


def test_scopes_name_the_environment_a_user_or_an_api_client(
    owner_client: APIClient, env: Environment, stranger: Any
) -> None:
    client = api_client_create(name="bot", environment=env).client
    scopes = [
        {"environment": str(env.pk)},
        {"user": stranger.pk},
        {"apiClient": str(client.pk)},
    ]
    for scope in scopes:
        made = owner_client.post("/v1/budgets", body(scope=scope, limitTokens=10), format="json")
        assert made.status_code == 201, made.json()
        assert made.json()["scope"] == scope
    assert Budget.objects.count() == 3


@pytest.mark.parametrize(
    ("changes", "loc"),
    [
        ({"limitUsd": "-1"}, ["body", "limitUsd"]),
        ({"limitUsd": 0}, ["body", "limitUsd"]),
        ({"limitUsd": "1e9"}, ["body", "limitUsd"]),
        ({"limitUsd": "0.0000001"}, ["body", "limitUsd"]),
        ({"limitTokens": -5}, ["body", "limitTokens"]),
        ({"limitTokens": 10**15}, ["body", "limitTokens"]),
        ({"limitTokens": 2.5}, ["body", "limitTokens"]),
        ({}, ["body", "limitUsd"]),  # no limit at all
        ({"limitTokens": 5, "scope": {"team": "x"}}, ["body", "scope", "team"]),
        ({"limitTokens": 5, "scope": {}}, ["body", "scope"]),
        ({"limitTokens": 5, "scope": {"agent": None, "user": 3}}, ["body", "scope"]),
        ({"limitTokens": 5, "scope": {"agent": "not-a-uuid"}}, ["body", "scope", "agent"]),
        ({"limitTokens": 5, "scope": {"user": "bob"}}, ["body", "scope", "user"]),
        ({"limitTokens": 5, "scope": {"user": 2**40}}, ["body", "scope", "user"]),
        ({"limitTokens": 5, "period": "week"}, ["body", "period"]),
        ({"limitTokens": 5, "action": "shout"}, ["body", "action"]),
    ],
)
def test_bad_limits_and_scopes_are_400_at_their_path(
    owner_client: APIClient, changes: dict[str, Any], loc: list[Any]
) -> None:
    answer = owner_client.post("/v1/budgets", body(**changes), format="json")
    assert answer.status_code == 400, answer.json()
    assert loc in [item["loc"] for item in answer.json()["detail"]], answer.json()
    assert not Budget.objects.exists()


def test_a_patch_may_not_leave_a_budget_without_a_limit(owner_client: APIClient) -> None:
    made = owner_client.post("/v1/budgets", body(limitTokens=10), format="json").json()
    answer = owner_client.patch(f"/v1/budgets/{made['id']}", {"limitTokens": None}, format="json")
    assert answer.status_code == 400
    assert answer.json()["detail"][0]["loc"] == ["body", "limitUsd"]
    assert Budget.objects.get().limit_tokens == 10


def test_an_object_the_caller_cannot_edit_here_is_a_404(
    owner_client: APIClient, make_agent: Any, other_env: Environment
) -> None:
    elsewhere = make_agent("calc", environment=other_env)
    foreign_client = api_client_create(name="bot", environment=other_env).client
    for scope in (
        {"agent": str(elsewhere.pk)},
        {"apiClient": str(foreign_client.pk)},
        {"environment": str(other_env.pk)},
        {"user": 987654},
        {"agent": "00000000-0000-4000-8000-000000000000"},
    ):
        answer = owner_client.post("/v1/budgets", body(scope=scope, limitUsd=1), format="json")
        assert answer.status_code == 404, (scope, answer.json())
    assert not Budget.objects.exists()


def test_budgets_need_edit_on_the_environment(
    owner_client: APIClient, make_agent: Any, env: Environment
) -> None:
    agent = make_agent()
    made = owner_client.post("/v1/budgets", body(limitUsd=1), format="json").json()
    reader = UserFactory(username="reader")
    for action in (Action.READ, Action.INVOKE):
        grant(reader, action, env)
    agent_editor = UserFactory(username="agent-editor")
    grant(agent_editor, Action.EDIT, agent)  # the agent's, not the environment's
    for user in (reader, agent_editor):
        client = client_for(user)
        assert client.get("/v1/budgets").status_code == 403
        assert client.post("/v1/budgets", body(limitUsd=1), format="json").status_code == 403
        assert client.get(f"/v1/budgets/{made['id']}").status_code == 404
        assert client.patch(f"/v1/budgets/{made['id']}", {}, format="json").status_code == 404
        assert client.delete(f"/v1/budgets/{made['id']}").status_code == 404
    assert Budget.objects.count() == 1


def test_a_budget_of_another_environment_is_not_found_here(
    owner: Any, other_env: Environment, admin_user: Any
) -> None:
    theirs = client_for(admin_user, other_env).post("/v1/budgets", body(limitUsd=1), format="json")
    assert theirs.status_code == 201
    mine = client_for(owner)
    assert mine.get(f"/v1/budgets/{theirs.json()['id']}").status_code == 404
    assert mine.get("/v1/budgets").json()["budgets"] == []
    assert mine.get("/v1/budgets/nope").status_code == 400


def test_listing_budgets_takes_a_fixed_number_of_queries(
    owner_client: APIClient, django_assert_max_num_queries: Any
) -> None:
    for _ in range(5):
        owner_client.post("/v1/budgets", body(limitUsd=1), format="json")
    with django_assert_max_num_queries(8):
        assert len(owner_client.get("/v1/budgets").json()["budgets"]) == 5
