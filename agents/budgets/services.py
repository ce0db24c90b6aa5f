"""Writes of budgets (docs/api.md#budgets): EDIT on the environment makes, changes and
removes them; a scope's object must be one of the environment's that the caller may EDIT
(else it is not found, as anything the caller cannot see)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction

from agentbuilder.errors import ErrorItem, Invalid, Loc, NotFound
from agentbuilder.users import User
from agents.access.permissions import Action, agents_with, require_on_environment
from agents.audit.services import audit_record, created, diff, snapshot
from agents.models import APIClient, Budget, BudgetAction, BudgetPeriod, BudgetScope, Environment

# Past these a limit is a typo (cents for dollars, a misplaced digit), not a budget.
MAX_USD = Decimal(1_000_000)
MAX_TOKENS = 10**12
USD_PLACES = 6
MAX_USER_ID = 2**31 - 1  # auth's users have 32-bit ids


# What a budget's records show of it.
AUDITED_FIELDS = (
    "scope",
    "agent",
    "user",
    "api_client",
    "period",
    "limit_usd",
    "limit_tokens",
    "action",
    "description",
)


@dataclass(frozen=True)
class BudgetFields:
    """A budget as it is asked for: the scope and its object's id (None for the environment
    itself, whose id is checked by the caller's view of it), the period, the limits and what
    happens past them."""

    scope: str
    target: str | None
    period: str
    limit_usd: Decimal | None
    limit_tokens: int | None
    action: str
    description: str = ""

    @classmethod
    def of(cls, budget: Budget) -> BudgetFields:
        target = budget.agent_id or budget.user_id or budget.api_client_id
        return cls(
            scope=budget.scope,
            target=None if target is None else str(target),
            period=budget.period,
            limit_usd=budget.limit_usd,
            limit_tokens=budget.limit_tokens,
            action=budget.action,
            description=budget.description,
        )


@transaction.atomic
def budget_create(
    *, user: User, environment: Environment, fields: BudgetFields, loc: Loc = ("body",)
) -> Budget:
    """A new budget of `environment`. Raises PermissionDenied (no EDIT on it), NotFound (the
    scope's object, at `loc` + scope) or Invalid (at the field's path under `loc`)."""
    require_on_environment(user, environment, Action.EDIT)
    budget = Budget(environment=environment, created_by=user)
    _assign(budget, user, fields, loc)
    budget.save()
    audit_record(
        user=user,
        action="create",
        obj=budget,
        environment=environment,
        changes=created(snapshot(budget, AUDITED_FIELDS)),
    )
    return budget


@transaction.atomic
def budget_update(
    *, user: User, budget: Budget, fields: BudgetFields, loc: Loc = ("body",)
) -> Budget:
    """Change a budget to `fields` (its spend so far stays). Raises as budget_create."""
    require_on_environment(user, budget.environment, Action.EDIT)
    before = snapshot(budget, AUDITED_FIELDS)
    _assign(budget, user, fields, loc)
    budget.save()
    changed = diff(before, snapshot(budget, AUDITED_FIELDS))
    if changed:
        audit_record(
            user=user, action="update", obj=budget, environment=budget.environment, changes=changed
        )
    return budget


@transaction.atomic
def budget_delete(*, user: User, budget: Budget) -> None:
    """Remove a budget and its spend; runs under way stop being charged for it."""
    require_on_environment(user, budget.environment, Action.EDIT)
    budget_id = budget.pk
    budget.delete()
    budget.pk = budget_id  # the record names the row that went
    audit_record(user=user, action="delete", obj=budget, environment=budget.environment)


def _assign(budget: Budget, user: User, fields: BudgetFields, loc: Loc) -> None:
    _check(fields, loc)
    budget.agent = budget.user = budget.api_client = None
    environment = budget.environment
    target = fields.target or ""
    match fields.scope:
        case BudgetScope.ENVIRONMENT:
            if fields.target not in (None, str(environment.pk)):
                raise NotFound(f"Environment '{fields.target}' not found.")
        case BudgetScope.AGENT:
            agent = agents_with(user, Action.EDIT).filter(environment=environment, pk=target)
            budget.agent = agent.first()
            if budget.agent is None:
                raise NotFound(f"Agent '{fields.target}' not found.")
        case BudgetScope.USER:
            budget.user = get_user_model().objects.filter(pk=target, is_active=True).first()
            if budget.user is None:
                raise NotFound(f"User '{fields.target}' not found.")
        case BudgetScope.API_CLIENT:
            client = APIClient.objects.filter(environment=environment, pk=target)
            budget.api_client = client.first()
            if budget.api_client is None:
                raise NotFound(f"API client '{fields.target}' not found.")
    budget.scope = fields.scope
    budget.period = fields.period
    budget.limit_usd = fields.limit_usd
    budget.limit_tokens = fields.limit_tokens
    budget.action = fields.action
    budget.description = fields.description


def _check(fields: BudgetFields, loc: Loc) -> None:
    problems = []
    if fields.scope not in BudgetScope.values:
        problems.append(ErrorItem((*loc, "scope"), f"unknown scope '{fields.scope}'"))
    elif fields.scope != BudgetScope.ENVIRONMENT:
        _check_target(fields, loc)
    if fields.period not in BudgetPeriod.values:
        problems.append(ErrorItem((*loc, "period"), "must be 'day' or 'month'"))
    if fields.action not in BudgetAction.values:
        problems.append(ErrorItem((*loc, "action"), "must be 'block' or 'warn'"))
    if fields.limit_usd is None and fields.limit_tokens is None:
        problems.append(ErrorItem((*loc, "limitUsd"), "give limitUsd, limitTokens or both"))
    usd = fields.limit_usd
    if usd is not None and not (0 < usd <= MAX_USD):
        problems.append(ErrorItem((*loc, "limitUsd"), f"must be over 0 and at most {MAX_USD}"))
    elif usd is not None and -usd.as_tuple().exponent > USD_PLACES:  # type: ignore[operator]
        problems.append(ErrorItem((*loc, "limitUsd"), f"at most {USD_PLACES} decimal places"))
    tokens = fields.limit_tokens
    if tokens is not None and not (0 < tokens <= MAX_TOKENS):
        message = f"must be over 0 and at most {MAX_TOKENS}"
        problems.append(ErrorItem((*loc, "limitTokens"), message))
    if problems:
        raise Invalid(problems)


def _check_target(fields: BudgetFields, loc: Loc) -> None:
    """The object's id has its kind's form: a number for a user, a uuid for the others."""
    target = fields.target or ""
    where = (*loc, "scope", fields.scope)
    if fields.scope == BudgetScope.USER:
        if not target.isdigit() or not 0 < int(target) <= MAX_USER_ID:
            raise Invalid.at(where, "must be a user id (a number)")
        return
    try:
        uuid.UUID(target)
    except ValueError:
        raise Invalid.at(where, "must be a uuid") from None
