"""Reads of usage (docs/api.md#usage): what the runs a caller may see spent in a period, added
up in SQL by agent, version, caller, model or day."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal, get_args

from django.db import connection
from django.db.models import BigIntegerField, Count, F, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, TruncDate

from agentbuilder.errors import Invalid
from agentbuilder.users import User
from agents.models import Agent, AgentVersion, Environment, LLMModel, Run
from agents.selectors.runs import runs_visible

GroupBy = Literal["agent", "version", "caller", "model", "day"]
GROUPS: tuple[str, ...] = get_args(GroupBy)
DEFAULT_SPAN = timedelta(days=30)
# A year and a day, so that "the last year" fits whatever the leap days; a wider report
# would add up a table that retention (RUN_RETENTION_DAYS) is meant to keep short.
MAX_SPAN = timedelta(days=366)
TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens")


@dataclass(frozen=True)
class Period:
    """Runs started at or after `start` and before `end` (UTC)."""

    start: datetime
    end: datetime


def usage_period(
    *,
    start: date | datetime | None,
    end: date | datetime | None,
    now: datetime,
    loc: Sequence[str] = (),
) -> Period:
    """The period a report covers: `start` and `end` as given (a date is its whole UTC day,
    a datetime without a zone is UTC); `end` absent: now; `start` absent: 30 days before
    `end`. Raises Invalid at `loc` + ("to",) when it ends before it starts, at ("from",)
    when it spans more than MAX_SPAN."""
    try:
        until = now if end is None else _instant(end, next_day=True)
    except OverflowError:
        raise Invalid.at((*loc, "to"), "out of range") from None
    try:
        since = until - DEFAULT_SPAN if start is None else _instant(start, next_day=False)
    except OverflowError:
        raise Invalid.at((*loc, "from"), "out of range") from None
    if until <= since:
        raise Invalid.at((*loc, "to"), "must be after 'from'")
    if until - since > MAX_SPAN:
        raise Invalid.at((*loc, "from"), f"a report spans at most {MAX_SPAN.days} days")
    return Period(since, until)


def _instant(value: date | datetime, *, next_day: bool) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    # An end date includes its day: the period ends at the next midnight.
    day = value + timedelta(days=1) if next_day else value
    return datetime.combine(day, time(), tzinfo=UTC)


@dataclass(frozen=True)
class UsageRow:
    """One group's runs, tokens and cost. `cost_usd` is the sum over the runs that have a
    price, None when none has; `unpriced_runs` counts those whose cost is unknown (a model
    without a price; runs from before prices), so that a sum is known to fall short."""

    key: str | None  # None: the runs of callers since deleted
    label: str
    runs: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal | None
    unpriced_runs: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def usage_report(
    *, user: User, period: Period, group_by: GroupBy, environment: Environment | None = None
) -> list[UsageRow]:
    """The usage of the runs `user` may see (runs_visible: its own, and every caller's of
    the agents it holds AUDIT on) started in `period`, in `environment` or in all, one row
    per group: days in order, the rest dearest first."""
    runs = runs_visible(user=user, environment=environment).filter(
        started_at__gte=period.start, started_at__lt=period.end
    )
    rows = _by_model(runs) if group_by == "model" else _by_column(runs, group_by)
    if group_by == "day":
        return sorted(rows, key=lambda r: r.key or "")
    return sorted(
        rows, key=lambda r: (r.cost_usd is None, -(r.cost_usd or 0), -r.runs, r.key or "")
    )


_COLUMNS: dict[str, Any] = {
    "agent": F("agent_id"),
    "version": F("version_id"),
    "caller": F("caller_id"),
    "day": TruncDate("started_at", tzinfo=UTC),
}


def _token(key: str) -> Coalesce:
    return Coalesce(Sum(Cast(KT(f"tokens_usage__{key}"), BigIntegerField())), 0)


def _by_column(runs: QuerySet[Run], group_by: str) -> list[UsageRow]:
    unpriced = Q(cost_usd__isnull=True, tokens_usage__total_tokens__gt=0)
    groups = (
        runs.order_by()
        .values(group=_COLUMNS[group_by])
        .annotate(
            runs=Count("pk"),
            input_tokens=_token("input_tokens"),
            output_tokens=_token("output_tokens"),
            cached_input_tokens=_token("cached_input_tokens"),
            cost=Sum("cost_usd"),
            unpriced=Count("pk", filter=unpriced),
        )
    )
    found = [
        (
            None if g["group"] is None else str(g["group"]),
            g["runs"],
            g["input_tokens"],
            g["output_tokens"],
            g["cached_input_tokens"],
            g["cost"],
            g["unpriced"],
        )
        for g in groups
    ]
    return _labelled(group_by, found)


def _by_model(runs: QuerySet[Run]) -> list[UsageRow]:
    visible, params = runs.order_by().values("models_usage").query.sql_with_params()
    head, tail = _by_model_sql()
    with connection.cursor() as cursor:
        cursor.execute(head + visible + tail, params)
        found = list(cursor.fetchall())
    return _labelled("model", found)


@functools.cache
def _by_model_sql() -> tuple[str, str]:
    """The statement around the visible runs' `models_usage` ({model: {input_tokens, …,
    cost_usd}}, agents.runtime.pricing): each model's entry read once, as a typed row."""
    tokens = ", ".join(f"SUM(COALESCE(u.{key}, 0))" for key in TOKENS)
    head = f"""
        SELECT m.key, COUNT(*), {tokens}, SUM(u.cost_usd),
            COUNT(*) FILTER (
                WHERE u.cost_usd IS NULL
                AND COALESCE(u.input_tokens, 0) + COALESCE(u.output_tokens, 0) > 0
            )
        FROM (
    """  # noqa: S608 (names from TOKENS; every value is a parameter of the visible runs' SQL)
    tail = """
        ) AS r (usage)
        CROSS JOIN LATERAL jsonb_each(r.usage) AS m (key, value)
        CROSS JOIN LATERAL jsonb_to_record(m.value) AS u (
            input_tokens bigint, output_tokens bigint, cached_input_tokens bigint,
            cost_usd numeric
        )
        WHERE jsonb_typeof(r.usage) = 'object' AND jsonb_typeof(m.value) = 'object'
        GROUP BY m.key
    """
    return head, tail


def _labelled(group_by: str, found: list[tuple[Any, ...]]) -> list[UsageRow]:
    labels = _labels(group_by, [str(row[0]) for row in found if row[0] is not None])
    return [
        UsageRow(
            key=key,
            label=labels.get(key, "") if key is not None else "",
            runs=runs,
            input_tokens=int(inputs),
            output_tokens=int(outputs),
            cached_input_tokens=int(cached),
            cost_usd=cost,
            unpriced_runs=unpriced,
        )
        for key, runs, inputs, outputs, cached, cost, unpriced in (
            (None if row[0] is None else str(row[0]), *row[1:]) for row in found
        )
    ]


def _labels(group_by: str, keys: list[str]) -> dict[str, str]:
    """What a person calls each key: the agent's name, its version's, the caller's
    username, the model's name (one query; a day is its own label)."""
    if not keys or group_by == "day":
        return {}
    if group_by == "agent":
        return {
            str(pk): name
            for pk, name in Agent.objects.filter(pk__in=keys).values_list("pk", "name")
        }
    if group_by == "version":
        versions = AgentVersion.objects.filter(pk__in=keys).values_list(
            "pk", "agent__name", "number", "version_label"
        )
        return {
            str(pk): f"{name} v{number}" + (f" · {label}" if label else "")
            for pk, name, number, label in versions
        }
    if group_by == "caller":
        users = User.objects.filter(pk__in=[int(k) for k in keys if k.isdigit()])
        return {str(pk): name for pk, name in users.values_list("pk", "username")}
    return dict(LLMModel.objects.filter(pk__in=keys).values_list("pk", "name"))
