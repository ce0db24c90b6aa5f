"""Reads of budgets: an environment's, each with its current period's spend, for callers who
hold EDIT on the environment (docs/api.md#budgets)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.db.models import Q, QuerySet

from agentbuilder.errors import NotFound
from agentbuilder.users import User
from agents.access.permissions import Action, environments_with, require_on_environment
from agents.budgets.limits import WARN_AT, BudgetLimits, Spent
from agents.budgets.periods import period_start
from agents.models import Budget, BudgetSpend, Environment


@dataclass(frozen=True)
class BudgetNow:
    """A budget and what its scope has spent in the period under way."""

    budget: Budget
    limits: BudgetLimits
    start: date
    spent: Spent
    warned_80_at: datetime | None = None
    warned_100_at: datetime | None = None

    @property
    def used(self) -> float:
        return self.limits.used(self.spent)


def budget_list(*, user: User, environment: Environment) -> QuerySet[Budget]:
    """The environment's budgets, oldest first. Raises PermissionDenied (no EDIT on it)."""
    require_on_environment(user, environment, Action.EDIT)
    return Budget.objects.filter(environment=environment).order_by("created_at", "id")


def budget_get(*, user: User, environment: Environment, budget_id: uuid.UUID) -> Budget:
    """One of the environment's budgets. Raises NotFound (none, or no EDIT on it)."""
    found = Budget.objects.filter(environment=environment, pk=budget_id).first()
    if found is None or not environments_with(user, Action.EDIT).filter(pk=environment.pk).exists():
        raise NotFound(f"Budget '{budget_id}' not found.")
    return found


def budgets_now(budgets: Sequence[Budget], at: datetime | None = None) -> list[BudgetNow]:
    """Each budget with its current period's spend: one query for all."""
    at = at or datetime.now(UTC)
    starts = {b.pk: period_start(b.period, at) for b in budgets}
    wanted = Q(pk__in=[])
    for budget_id, start in starts.items():
        wanted |= Q(budget_id=budget_id, period_start=start)
    spends = {s.budget_id: s for s in BudgetSpend.objects.filter(wanted)} if budgets else {}
    found = []
    for budget in budgets:
        spend = spends.get(budget.pk)
        found.append(
            BudgetNow(
                budget=budget,
                limits=budget_limits(budget),
                start=starts[budget.pk],
                spent=Spent(spend.spent_usd, spend.spent_tokens) if spend else Spent(),
                warned_80_at=spend.warned_80_at if spend else None,
                warned_100_at=spend.warned_100_at if spend else None,
            )
        )
    return found


def budgets_near_limit(*, user: User) -> list[BudgetNow]:
    """The budgets of the environments `user` holds EDIT on that are at 80 % or more of a
    limit this period, the most spent first (the admin's warnings)."""
    budgets = Budget.objects.filter(
        environment__in=environments_with(user, Action.EDIT)
    ).select_related("environment", "agent", "user", "api_client")
    near = [b for b in budgets_now(list(budgets)) if b.used * 100 >= WARN_AT[0]]
    return sorted(near, key=lambda b: -b.used)


def budget_limits(budget: Budget) -> BudgetLimits:
    target = budget.agent_id or budget.user_id or budget.api_client_id
    return BudgetLimits(
        id=budget.pk,
        environment_id=budget.environment_id,
        scope=budget.scope,
        target=None if target is None else str(target),
        period=budget.period,
        limit_usd=budget.limit_usd,
        limit_tokens=budget.limit_tokens,
        action=budget.action,
    )
