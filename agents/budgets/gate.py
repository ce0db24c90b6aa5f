"""Budgets on the run path (docs/architecture.md#budgets): the refusal before a run opens,
and the gate between its model calls (agents.runtime.spec.SpendGate).

Safe under concurrency by an atomic counter, not reservations: each model call's usage is
added to every applicable budget's row of the period by one upsert, which answers the new
totals; a run starts a call only while the totals it last saw (at its start, then from its
own last charge) leave its budgets unspent. Once a budget is spent, each run in flight can
therefore be charged for at most one more call: together, runs overshoot a budget by at
most one model call each.

A run that no budget applies to gets no gate: its whole cost is the one indexed read at its
start (`budget_check`). A run that budgets apply to pays one statement per model call, and
its last call's rides in the hop that writes the run's end (`settle`, from the recorder).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, connection

from agentbuilder.db import in_db
from agentbuilder.errors import DomainError
from agents.budgets.limits import WARN_AT, BudgetLimits, Spent
from agents.budgets.periods import period_start
from agents.budgets.warnings import budget_warning_send
from agents.llm.base import Usage
from agents.models import APIClient, Budget, BudgetSpend
from agents.runtime.failures import FailureCode
from agents.runtime.spec import RunFailure

logger = logging.getLogger(__name__)


class BudgetExceeded(DomainError):
    """A run refused before it opened: a blocking budget that applies to it is spent. A
    402 whose body carries the budget beside `detail`; no run is left behind."""

    status = 402
    code = FailureCode.BUDGET_EXCEEDED

    def __init__(self, limits: BudgetLimits, spent: Spent) -> None:
        super().__init__(limits.spent_message(spent))
        start = period_start(limits.period)
        self.context = {"budget": limits.as_json(spent, start)}


def budget_check(
    *, environment_id: uuid.UUID, agent_id: uuid.UUID, user_id: Any
) -> BudgetGate | None:
    """The gate of a run of `agent_id` called by `user_id` (see `budget_gate`), read in a
    statement of its own. The run path reads the same rows inside its lookup statement
    instead (agents.runs.lookup), at no statement of its own."""
    now = datetime.now(UTC)
    sql = "SELECT " + applying_sql(environment="%(environment)s", agent="%(agent)s")
    params = {"environment": environment_id, "agent": agent_id, "user": user_id}
    with connection.cursor() as cursor:
        cursor.execute(sql, params | applying_params(now))
        row = cursor.fetchone()
    return budget_gate(row[0] if row else None, environment_id=environment_id, now=now)


def budget_gate(
    rows: Sequence[Sequence[Any]] | None, *, environment_id: uuid.UUID, now: datetime
) -> BudgetGate | None:
    """The gate of the budgets `applying_sql` found (the environment's, the agent's, the
    user's, and its API client's if it is one) with this period's spend; None when none
    does. Raises BudgetExceeded for a blocking one that is spent."""
    if not rows:
        return None
    seen = {}
    for row in rows:
        limits = BudgetLimits(
            id=uuid.UUID(row[0]),
            environment_id=environment_id,
            scope=row[1],
            target=row[2],
            period=row[3],
            limit_usd=None if row[4] is None else Decimal(row[4]),
            limit_tokens=row[5],
            action=row[6],
        )
        spent = Spent(Decimal(row[7]), int(row[8]))
        if limits.blocks and limits.spent_out(spent):
            raise BudgetExceeded(limits, spent)
        seen[limits] = Seen(period_start(limits.period, now), spent)
    return BudgetGate(seen)


@dataclass(frozen=True)
class Seen:
    """A budget's spend as a run last saw it, and the period it was of."""

    start: date
    spent: Spent


class BudgetGate:
    """The spend gate of a run that budgets apply to: before each model call, a blocking
    budget whose total the run last saw is spent ends the run `budget_exceeded` (the totals
    came with the run's start and with each charge); each call's usage is charged to all
    of them before the next call, or with the run's end, and their new totals kept."""

    def __init__(self, seen: Mapping[BudgetLimits, Seen]) -> None:
        self.budgets = tuple(sorted(seen, key=lambda b: b.id))  # one lock order for all
        self.blocking = tuple(b for b in self.budgets if b.blocks)
        self.seen = {limits.id: found for limits, found in seen.items()}
        self.pending = Spent()  # the last call's usage, not charged yet

    async def before_call(self) -> None:
        if self.pending.tokens or self.pending.usd:  # the last call's, with the totals it answers
            await in_db(self.settle)()
        now = datetime.now(UTC)
        for limits in self.blocking:
            seen = self.seen[limits.id]
            # A new period (midnight, the 1st) starts from nothing.
            spent = seen.spent if seen.start == period_start(limits.period, now) else Spent()
            if limits.spent_out(spent):
                raise RunFailure(FailureCode.BUDGET_EXCEEDED, limits.spent_message(spent))

    async def after_call(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        # Kept until the next call or the run's end: the run starts no call before it is
        # charged, so at any time a run has at most one call uncharged, which is what the
        # bound on overshoot needs (the module's docstring).
        self.pending = Spent(
            self.pending.usd + (Decimal(str(cost_usd)) if cost_usd else Decimal(0)),
            self.pending.tokens + usage.input_tokens + usage.output_tokens,
        )

    def settle(self) -> None:
        """Charge the kept call (unpriced: its tokens count, its dollars nothing)."""
        pending, self.pending = self.pending, Spent()
        if pending.tokens or pending.usd:
            self.seen.update(charge(self.budgets, pending.usd, pending.tokens))


def charge(budgets: Sequence[BudgetLimits], usd: Decimal, tokens: int) -> dict[uuid.UUID, Seen]:
    """Add one model call's cost and tokens to each budget's row of its period (made if
    new), in one statement, and answer their new totals; then send the warnings this call
    made due, each claimed by one process only."""
    ids, starts = _periods(budgets)
    params: dict[str, Any] = {"budgets": ids, "starts": starts, "usd": usd, "tokens": tokens}
    try:
        with connection.cursor() as cursor:
            cursor.execute(_charge_sql(), params)
            rows = cursor.fetchall()
    except IntegrityError:  # a budget deleted by a statement running alongside this one
        logger.info("budgets %s: one was deleted during the charge; not charged", ids)
        return {}
    by_id = {b.id: b for b in budgets}
    seen = {}
    for spend_id, budget_id, start, spent_usd, spent_tokens, warned_80, warned_100 in rows:
        limits, spent = by_id[budget_id], Spent(spent_usd, spent_tokens)
        seen[budget_id] = Seen(start, spent)
        percent = limits.used(spent) * 100
        for threshold, warned in zip(WARN_AT, (warned_80, warned_100), strict=True):
            if warned is None and percent >= threshold:
                budget_warning_send(
                    limits=limits, spend_id=spend_id, start=start, spent=spent, threshold=threshold
                )
    return seen


def _periods(budgets: Sequence[BudgetLimits]) -> tuple[list[uuid.UUID], list[Any]]:
    now = datetime.now(UTC)
    return [b.id for b in budgets], [period_start(b.period, now) for b in budgets]


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {
        "budgets": quote(Budget._meta.db_table),
        "spends": quote(BudgetSpend._meta.db_table),
        "clients": quote(APIClient._meta.db_table),
    }


def applying_params(now: datetime) -> dict[str, date]:
    """The parameters `applying_sql` names: the periods' starts at `now`."""
    return {"budget_day": period_start("day", now), "budget_month": period_start("month", now)}


def applying_sql(*, environment: str, agent: str) -> str:
    """A scalar subquery: the budgets that apply to a run of `agent` in `environment` (SQL
    expressions) by the caller `%(user)s`, with this period's spend, as a JSON array of
    [id, scope, target, period, limit_usd, limit_tokens, action, spent_usd, spent_tokens]
    (numbers as text, so that no dollar passes through a float), or NULL when none does.
    One index probe when the environment has no budget."""
    t = _tables()
    # Table names from the models' metadata, expressions from this package's callers;
    # every value is a parameter.
    return f"""(
        SELECT json_agg(json_build_array(
            b.id, b.scope, COALESCE(b.agent_id::text, b.user_id::text, b.api_client_id::text),
            b.period, b.limit_usd::text, b.limit_tokens, b.action,
            COALESCE(s.spent_usd, 0)::text, COALESCE(s.spent_tokens, 0)) ORDER BY b.id)
        FROM {t["budgets"]} b
        LEFT JOIN {t["spends"]} s ON s.budget_id = b.id
            AND s.period_start = CASE b.period
                WHEN 'day' THEN %(budget_day)s::date ELSE %(budget_month)s::date END
        WHERE b.environment_id = {environment}
          AND (b.scope = 'environment' OR b.agent_id = {agent} OR b.user_id = %(user)s
               OR b.api_client_id IN (
                   SELECT c.id FROM {t["clients"]} c WHERE c.service_user_id = %(user)s))
    )"""  # noqa: S608


@functools.cache
def _charge_sql() -> str:
    t = _tables()
    # Rows in budget order (the gate sorts them): concurrent charges lock alike, no deadlock.
    return f"""
        INSERT INTO {t["spends"]} AS s
            (budget_id, period_start, spent_usd, spent_tokens)
        SELECT p.budget_id, p.start, %(usd)s, %(tokens)s
        FROM unnest(%(budgets)s::uuid[], %(starts)s::date[]) AS p(budget_id, start)
        JOIN {t["budgets"]} b ON b.id = p.budget_id  -- not one deleted since the run began
        ON CONFLICT (budget_id, period_start) DO UPDATE SET
            spent_usd = s.spent_usd + EXCLUDED.spent_usd,
            spent_tokens = s.spent_tokens + EXCLUDED.spent_tokens
        RETURNING s.id, s.budget_id, s.period_start, s.spent_usd, s.spent_tokens,
            s.warned_80_at, s.warned_100_at
    """  # noqa: S608
