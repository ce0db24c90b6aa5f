"""GET /v1/usage (docs/api.md#usage): the report's body, its query and whose runs it adds up,
over runs of known tokens and costs (tests/support/usage.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from agents.models import Environment
from tests.conftest import client_for
from tests.support.usage import PERIOD, Spend, spend


@pytest.fixture
def world(make_agent: Any, admin_user: Any, env: Environment, other_env: Environment) -> Spend:
    return spend(make_agent, admin_user, env, other_env)


def report(user: Any, environment: Environment | None = None, **query: str) -> dict[str, Any]:
    got = client_for(user, environment).get("/v1/usage", query)
    assert got.status_code == 200, got.json()
    return got.json()


def test_usage_by_agent_is_the_callers_own_runs_with_tokens_and_cost(world: Spend) -> None:
    body = report(world.alice, **PERIOD, groupBy="agent")

    assert (body["from"], body["to"], body["groupBy"]) == (
        "2026-11-10T00:00:00Z",
        "2026-11-12T00:00:00Z",
        "agent",
    )
    assert body["rows"] == [
        {
            "key": str(world.alpha.pk),
            "label": "alpha",
            "runs": 2,
            "tokensUsage": {"input_tokens": 110, "output_tokens": 60, "total_tokens": 170},
            "costUsd": 0.015,
            "unpricedRuns": 0,
        },
        {
            "key": str(world.beta.pk),
            "label": "beta",
            "runs": 1,
            "tokensUsage": {"input_tokens": 30, "output_tokens": 30, "total_tokens": 60},
            "costUsd": None,  # its model has no price
            "unpricedRuns": 1,
        },
    ]


def test_usage_with_audit_adds_every_callers_runs_and_reports_cached_tokens(
    world: Spend,
) -> None:
    rows = report(world.auditor, **PERIOD, groupBy="caller")["rows"]

    assert [(r["label"], r["runs"], r["costUsd"]) for r in rows] == [
        ("bob", 1, 0.02),
        ("alice", 2, 0.015),
    ]
    assert rows[0]["tokensUsage"] == {
        "input_tokens": 200,
        "output_tokens": 100,
        "total_tokens": 300,
        "cached_input_tokens": 50,
    }
    assert [r["key"] for r in rows] == [str(world.bob.pk), str(world.alice.pk)]


def test_usage_without_audit_leaves_other_callers_out(world: Spend) -> None:
    rows = report(world.bob, **PERIOD, groupBy="caller")["rows"]

    assert [(r["label"], r["runs"]) for r in rows] == [("bob", 1)]


@pytest.mark.parametrize(
    ("group", "keys"),
    [
        ("version", {"alpha v1", "alpha v2", "beta v1"}),
        ("model", {"m1", "m2", "m3"}),
        ("day", {"2026-11-10", "2026-11-11"}),
    ],
)
def test_usage_groups(world: Spend, group: str, keys: set[str]) -> None:
    rows = report(world.alice, **PERIOD, groupBy=group)["rows"]

    assert {r["label"] or r["key"] for r in rows} == keys
    assert sum(r["runs"] for r in rows) == (4 if group == "model" else 3)


def test_usage_by_day_is_the_default_and_in_order(world: Spend) -> None:
    rows = report(world.alice, **PERIOD)["rows"]

    assert [(r["key"], r["costUsd"], r["unpricedRuns"]) for r in rows] == [
        ("2026-11-10", 0.01, 0),
        ("2026-11-11", 0.005, 1),
    ]


def test_usage_is_of_the_requests_environment(world: Spend, other_env: Environment) -> None:
    rows = report(world.alice, other_env, **PERIOD, groupBy="agent")["rows"]

    assert [(r["label"], r["costUsd"]) for r in rows] == [("gamma", 1.0)]


def test_usage_takes_datetimes_and_defaults_to_the_last_30_days(world: Spend) -> None:
    body = report(world.alice, **{"from": "2026-11-11T00:00:00+01:00", "to": "2026-11-11T12:00Z"})

    assert (body["from"], body["to"]) == ("2026-11-10T23:00:00Z", "2026-11-11T12:00:00Z")
    assert body["rows"] == []  # day 2's runs started at 23:59
    default = report(world.alice)
    span = datetime.fromisoformat(default["to"]) - datetime.fromisoformat(default["from"])
    assert span == timedelta(days=30)


def test_a_stranger_gets_no_rows(world: Spend, stranger: Any) -> None:
    assert report(stranger, **PERIOD, groupBy="agent")["rows"] == []


@pytest.mark.parametrize(
    ("query", "loc", "msg"),
    [
        ({"groupBy": "team"}, ["query", "groupBy"], "Input should be"),
        ({"from": "yesterday"}, ["query", "from"], "expected an ISO 8601 date"),
        ({"to": "2026-13-01"}, ["query", "to"], "expected an ISO 8601 date"),
        ({"to": ""}, ["query", "to"], "expected an ISO 8601 date"),
        ({"from": "2026-11-12", "to": "2026-11-11"}, ["query", "to"], "must be after 'from'"),
        ({"from": "2020-01-01", "to": "2026-11-11"}, ["query", "from"], "at most 366 days"),
        ({"to": "0001-01-01"}, ["query", "from"], "out of range"),
        ({"limit": "3"}, ["query", "limit"], "unknown field"),
    ],
)
def test_bad_query_is_400_at_its_path(
    owner: Any, query: dict[str, str], loc: list[str], msg: str
) -> None:
    got = client_for(owner).get("/v1/usage", query)

    assert got.status_code == 400
    [error] = got.json()["detail"]
    assert error["loc"] == loc
    assert msg in error["msg"]


def test_usage_needs_a_token(client: Any) -> None:
    assert client.get("/v1/usage").status_code == 401
