"""The usage report (agents/selectors/usage.py): its period, its groups, whose runs it adds
up, over runs of known tokens and costs (tests/support/usage.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from agentbuilder.errors import Invalid
from agents.models import Environment, Run
from agents.selectors.usage import Period, UsageRow, usage_period, usage_report
from tests.support.usage import Spend, spend

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
PERIOD = Period(datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 12, tzinfo=UTC))


@pytest.fixture
def world(make_agent: Any, admin_user: Any, env: Environment, other_env: Environment) -> Spend:
    return spend(make_agent, admin_user, env, other_env)


def by_key(rows: list[UsageRow]) -> dict[str | None, UsageRow]:
    return {row.key: row for row in rows}


# ---------------------------------------------------------------- the period


def test_period_defaults_to_the_last_30_days() -> None:
    assert usage_period(start=None, end=None, now=NOW) == Period(NOW - timedelta(days=30), NOW)


def test_period_dates_are_whole_utc_days_and_naive_times_utc() -> None:
    period = usage_period(start=date(2026, 11, 10), end=date(2026, 11, 11), now=NOW)
    assert period == PERIOD
    naive = usage_period(start=datetime(2026, 11, 10, 6), end=None, now=NOW)
    assert naive.start == datetime(2026, 11, 10, 6, tzinfo=UTC)


def test_period_without_start_is_30_days_before_its_end() -> None:
    period = usage_period(start=None, end=date(2026, 11, 11), now=NOW)
    assert period.start == datetime(2026, 10, 13, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "at", "msg"),
    [
        (date(2026, 11, 12), date(2026, 11, 11), "to", "must be after 'from'"),
        (NOW, NOW, "to", "must be after 'from'"),
        (date(2025, 1, 1), date(2026, 11, 11), "from", "a report spans at most 366 days"),
        (None, date(1, 1, 2), "from", "out of range"),
        (None, date(9999, 12, 31), "to", "out of range"),
    ],
)
def test_a_period_that_is_no_period_is_refused_at_its_field(
    start: Any, end: Any, at: str, msg: str
) -> None:
    with pytest.raises(Invalid) as caught:
        usage_period(start=start, end=end, now=NOW, loc=("query",))
    [error] = caught.value.errors
    assert (error.loc, error.msg) == (("query", at), msg)


def test_a_period_of_exactly_366_days_is_allowed() -> None:
    period = usage_period(start=date(2025, 11, 10), end=date(2026, 11, 10), now=NOW)
    assert period.end - period.start == timedelta(days=366)


# ---------------------------------------------------------------- the groups


def test_by_agent_adds_up_the_callers_own_runs_of_the_environment_in_the_period(
    world: Spend, env: Environment
) -> None:
    rows = usage_report(user=world.alice, period=PERIOD, group_by="agent", environment=env)

    # beta's only run has no price: it comes after every priced row.
    assert [r.key for r in rows] == [str(world.alpha.pk), str(world.beta.pk)]
    alpha, beta = rows
    assert (alpha.label, alpha.runs, alpha.input_tokens, alpha.output_tokens) == (
        "alpha",
        2,
        110,
        60,
    )
    assert alpha.total_tokens == 170
    assert (alpha.cost_usd, alpha.unpriced_runs) == (Decimal("0.015"), 0)
    assert (beta.label, beta.runs, beta.cost_usd, beta.unpriced_runs) == ("beta", 1, None, 1)


def test_by_version_labels_each_with_its_agent_and_number(world: Spend, env: Environment) -> None:
    rows = by_key(
        usage_report(user=world.alice, period=PERIOD, group_by="version", environment=env)
    )

    assert {k: (r.label, r.runs, r.cost_usd) for k, r in rows.items()} == {
        str(world.alpha_v1.pk): ("alpha v1", 1, Decimal("0.01")),
        str(world.alpha_v2.pk): ("alpha v2", 1, Decimal("0.005")),
        str(world.beta_v1.pk): ("beta v1", 1, None),
    }


def test_by_caller_with_audit_counts_every_callers_runs(world: Spend, env: Environment) -> None:
    rows = usage_report(user=world.auditor, period=PERIOD, group_by="caller", environment=env)

    # AUDIT on alpha only: both callers' alpha runs, none of beta's.
    assert [(r.key, r.label, r.runs, r.cost_usd) for r in rows] == [
        (str(world.bob.pk), "bob", 1, Decimal("0.02")),
        (str(world.alice.pk), "alice", 2, Decimal("0.015")),
    ]
    assert rows[0].cached_input_tokens == 50


def test_without_audit_a_caller_sees_only_its_own_runs(world: Spend, env: Environment) -> None:
    rows = usage_report(user=world.bob, period=PERIOD, group_by="caller", environment=env)

    assert [(r.key, r.runs) for r in rows] == [(str(world.bob.pk), 1)]


def test_a_stranger_sees_nothing(world: Spend, stranger: Any, env: Environment) -> None:
    for group in ("agent", "version", "caller", "model", "day"):
        assert usage_report(user=stranger, period=PERIOD, group_by=group, environment=env) == []


def test_by_model_splits_each_run_by_the_models_it_called(world: Spend, env: Environment) -> None:
    rows = usage_report(user=world.alice, period=PERIOD, group_by="model", environment=env)

    assert [(r.key, r.runs, r.input_tokens, r.output_tokens) for r in rows] == [
        ("m1", 2, 105, 55),
        ("m2", 1, 5, 5),
        ("m3", 1, 30, 30),
    ]
    assert [(r.cost_usd, r.unpriced_runs) for r in rows] == [
        (Decimal("0.012"), 0),
        (Decimal("0.003"), 0),
        (None, 1),
    ]


def test_by_model_labels_a_catalog_model_with_its_name(
    world: Spend, env: Environment, admin_user: Any
) -> None:
    run = world.runs[0]
    Run.objects.filter(pk=run.pk).update(
        models_usage={"openai/gpt-4o-mini": {"input_tokens": 1, "output_tokens": 1}}
    )
    rows = by_key(usage_report(user=admin_user, period=PERIOD, group_by="model"))

    assert rows["openai/gpt-4o-mini"].label == "GPT-4o mini (OpenAI-compatible)"
    assert rows["openai/gpt-4o-mini"].cost_usd is None  # a model without a cost_usd


def test_by_day_in_order_of_utc_dates(world: Spend, env: Environment) -> None:
    rows = usage_report(user=world.alice, period=PERIOD, group_by="day", environment=env)

    assert [(r.key, r.runs, r.cost_usd, r.unpriced_runs) for r in rows] == [
        ("2026-11-10", 1, Decimal("0.01"), 0),
        ("2026-11-11", 2, Decimal("0.005"), 1),  # r4's unknown cost left out, and counted
    ]


def test_every_environment_when_none_is_named(world: Spend) -> None:
    rows = by_key(usage_report(user=world.alice, period=PERIOD, group_by="agent"))

    assert rows[str(world.gamma.pk)].cost_usd == Decimal("1")
    assert set(rows) == {str(world.alpha.pk), str(world.beta.pk), str(world.gamma.pk)}


def test_the_period_bounds_the_runs(world: Spend, env: Environment) -> None:
    day_one = Period(PERIOD.start, PERIOD.start + timedelta(days=1))
    rows = usage_report(user=world.alice, period=day_one, group_by="agent", environment=env)
    assert [(r.label, r.runs) for r in rows] == [("alpha", 1)]
    september = usage_period(start=date(2026, 9, 1), end=date(2026, 9, 1), now=NOW)
    [old] = usage_report(user=world.alice, period=september, group_by="day", environment=env)
    assert (old.key, old.cost_usd) == ("2026-09-01", Decimal("5"))


def test_a_deleted_callers_runs_have_no_key(world: Spend, admin_user: Any) -> None:
    world.bob.delete()
    rows = by_key(usage_report(user=admin_user, period=PERIOD, group_by="caller"))

    assert rows[None].runs == 1
    assert rows[None].label == ""


def test_each_group_is_one_statement_and_its_labels_one_more(
    world: Spend, owner: Any, env: Environment, django_assert_max_num_queries: Any
) -> None:
    for group in ("agent", "version", "caller", "model", "day"):
        with django_assert_max_num_queries(2):
            rows = usage_report(user=owner, period=PERIOD, group_by=group, environment=env)
        assert sum(r.runs for r in rows) >= 4  # alice's and bob's, every model of each
