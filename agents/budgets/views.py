"""Budgets in the API (docs/api.md#budgets): `/v1/budgets` of the request's environment, each
with its period's spend. EDIT on the environment lists, shows, makes, changes and removes
them; a scope's object the caller cannot EDIT in it is not found (404)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, StrictInt, model_validator
from rest_framework.response import Response

from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel, OutputModel
from agents.budgets import selectors, services
from agents.budgets.periods import period_end
from agents.budgets.selectors import BudgetNow
from agents.budgets.services import MAX_TOKENS, MAX_USD, MAX_USER_ID, USD_PLACES, BudgetFields
from agents.models import Budget

BUDGET_ID = OpenApiParameter(
    "budgetId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Budget uuid."
)
Period = Literal["day", "month"]
BudgetActionIn = Literal["block", "warn"]
SCOPES = ("environment", "agent", "user", "apiClient")


class ScopeIn(CamelModel):
    """Exactly one: the environment itself (the request's: its id, or null), one of its
    agents, a user (their runs in it) or one of its API clients."""

    environment: uuid.UUID | None = None
    agent: uuid.UUID | None = None
    user: StrictInt | None = Field(None, gt=0, le=MAX_USER_ID)
    api_client: uuid.UUID | None = None

    @model_validator(mode="after")
    def _one(self) -> ScopeIn:
        kind, target = self.kind_and_target()
        if len(self.model_fields_set) != 1 or (target is None and kind != "environment"):
            raise Invalid.at(("scope",), f"name exactly one of {', '.join(SCOPES)}")
        return self

    def kind_and_target(self) -> tuple[str, str | None]:
        for name in self.model_fields_set:
            value = getattr(self, name)
            kind = "apiClient" if name == "api_client" else name
            return kind, None if value is None else str(value)
        return "", None


LIMIT_USD = Field(
    None,
    gt=0,
    le=MAX_USD,
    decimal_places=USD_PLACES,
    description="US dollars the scope may spend in a period, as the models' prices count it.",
)
LIMIT_TOKENS = Field(None, gt=0, le=MAX_TOKENS, description="Tokens (input and output) per period.")
ACTION_DOC = (
    "`block`: runs are refused (402) once it is spent, and a run that spends it stops before "
    "its next model call (`budget_exceeded`); `warn`: warnings only."
)


class BudgetCreate(CamelModel):
    scope: ScopeIn
    period: Period
    limit_usd: Decimal | None = LIMIT_USD
    limit_tokens: StrictInt | None = LIMIT_TOKENS
    action: BudgetActionIn = Field(description=ACTION_DOC)
    description: str = Field("", max_length=200)

    def fields(self) -> BudgetFields:
        scope, target = self.scope.kind_and_target()
        return BudgetFields(
            scope=scope,
            target=target,
            period=self.period,
            limit_usd=self.limit_usd,
            limit_tokens=self.limit_tokens,
            action=self.action,
            description=self.description,
        )


class BudgetPatch(CamelModel):
    """What is given changes; `null` removes a limit (one must remain)."""

    scope: ScopeIn | None = None
    period: Period | None = None
    limit_usd: Decimal | None = LIMIT_USD
    limit_tokens: StrictInt | None = LIMIT_TOKENS
    action: BudgetActionIn | None = None
    description: str | None = Field(None, max_length=200)

    def applied_to(self, fields: BudgetFields) -> BudgetFields:
        given = self.model_fields_set
        changes: dict[str, Any] = {
            name: getattr(self, name)
            for name in ("period", "action", "description")
            if name in given and getattr(self, name) is not None
        }
        changes |= {
            name: getattr(self, name) for name in ("limit_usd", "limit_tokens") if name in given
        }
        if self.scope is not None:
            changes["scope"], changes["target"] = self.scope.kind_and_target()
        return BudgetFields(**{**fields.__dict__, **changes})


class SpendOut(OutputModel):
    period_start: date
    period_end: date = Field(description="The first day after the period (UTC).")
    spent_usd: float = Field(description="Priced model calls only: an unpriced one adds tokens.")
    spent_tokens: int
    used: float = Field(description="Share of the nearer limit spent: 1.0 is all of it.")
    warned80_at: datetime | None = Field(description="When `budget.warning` at 80 % was sent.")
    warned100_at: datetime | None


class BudgetOut(OutputModel):
    id: uuid.UUID
    environment_id: uuid.UUID
    scope: dict[str, str | int] = Field(description='`{"agent": "<uuid>"}`, …: one key.')
    period: Period
    limit_usd: float | None
    limit_tokens: int | None
    action: BudgetActionIn
    description: str
    created_at: datetime
    modified_at: datetime
    current: SpendOut = Field(description="The period under way (UTC).")

    @classmethod
    def of(cls, now: BudgetNow) -> BudgetOut:
        budget, limits = now.budget, now.limits
        return cls(
            id=budget.pk,
            environment_id=budget.environment_id,
            scope=limits.scope_json(),
            period=limits.period,
            limit_usd=None if budget.limit_usd is None else float(budget.limit_usd),
            limit_tokens=budget.limit_tokens,
            action=limits.action,
            description=budget.description,
            created_at=budget.created_at,
            modified_at=budget.modified_at,
            current=SpendOut(
                period_start=now.start,
                period_end=period_end(limits.period, now.start),
                spent_usd=float(now.spent.usd),
                spent_tokens=now.spent.tokens,
                used=round(now.used, 6),
                warned80_at=now.warned_80_at,
                warned100_at=now.warned_100_at,
            ),
        )


class BudgetList(OutputModel):
    budgets: list[BudgetOut]


def _out(budget: Budget) -> BudgetOut:
    return BudgetOut.of(selectors.budgets_now([budget])[0])


class BudgetListView(ApiView):
    @extend_schema(
        operation_id="budgets_list",
        parameters=[ENVIRONMENT],
        responses={200: BudgetList},
        tags=["budgets"],
        summary="The environment's budgets, each with its period's spend",
        description="Needs EDIT on the environment.",
    )
    def get(self, request: ApiRequest) -> Response:
        budgets = list(selectors.budget_list(user=request.user, environment=self.environment))
        now = selectors.budgets_now(budgets)
        return render(BudgetList(budgets=[BudgetOut.of(b) for b in now]))

    @extend_schema(
        operation_id="budgets_create",
        parameters=[ENVIRONMENT],
        request=BudgetCreate,
        responses={201: BudgetOut},
        tags=["budgets"],
        summary="Limit what a scope of the environment spends per day or month",
        description="Needs EDIT on the environment; a scope's object that is not the "
        "environment's, or that the caller cannot EDIT, is a 404.",
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(BudgetCreate)
        budget = services.budget_create(
            user=request.user, environment=self.environment, fields=body.fields()
        )
        return render(_out(budget), status=201)


class BudgetDetailView(ApiView):
    def _budget(self, budget_id: str) -> Budget:
        return selectors.budget_get(
            user=self.request.user,
            environment=self.environment,
            budget_id=path_uuid(budget_id, "budgetId", "a budget id"),
        )

    @extend_schema(
        operation_id="budgets_get",
        parameters=[BUDGET_ID, ENVIRONMENT],
        responses={200: BudgetOut},
        tags=["budgets"],
    )
    def get(self, request: ApiRequest, budgetId: str) -> Response:
        return render(_out(self._budget(budgetId)))

    @extend_schema(
        operation_id="budgets_update",
        parameters=[BUDGET_ID, ENVIRONMENT],
        request=BudgetPatch,
        responses={200: BudgetOut},
        tags=["budgets"],
    )
    def patch(self, request: ApiRequest, budgetId: str) -> Response:
        budget = self._budget(budgetId)
        fields = self.body(BudgetPatch).applied_to(BudgetFields.of(budget))
        budget = services.budget_update(user=request.user, budget=budget, fields=fields)
        return render(_out(budget))

    @extend_schema(
        operation_id="budgets_delete",
        parameters=[BUDGET_ID, ENVIRONMENT],
        responses={204: None},
        tags=["budgets"],
    )
    def delete(self, request: ApiRequest, budgetId: str) -> Response:
        services.budget_delete(user=request.user, budget=self._budget(budgetId))
        return Response(status=204)
