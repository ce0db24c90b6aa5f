"""Usage (docs/api.md#usage): what the caller's runs, and with AUDIT every caller's, spent in
a period, by agent, version, caller, model or day."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from pydantic import BeforeValidator, Field
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.wire import CamelModel, OutputModel
from agents.api.schemas import TokensUsage
from agents.selectors.usage import MAX_SPAN, GroupBy, UsageRow, usage_period, usage_report

WHEN = "an ISO 8601 date (2026-11-01) or date-time (2026-11-01T09:30:00Z)"


def _when(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        # A date alone is a whole day (the period's first, or its last for `to`).
        return date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"expected {WHEN}") from None


When = Annotated[datetime | date | None, BeforeValidator(_when)]


class UsageQuery(CamelModel):
    from_: When = Field(
        None,
        alias="from",
        description=f"{WHEN.capitalize()}, UTC unless it says. Default: 30 days before `to`.",
    )
    to: When = Field(None, description="The end, excluded; a date includes its day. Default: now.")
    group_by: GroupBy = Field("day", description="What a row adds up; `day`: by UTC date.")


class UsageRowOut(OutputModel):
    key: str | None = Field(
        description="The agent's or version's id, the caller's user id, the model id or "
        "the date (YYYY-MM-DD); null for the runs of callers since deleted."
    )
    label: str = Field(description="The agent's name, `name vN`, the username, the model's name.")
    runs: int
    tokens_usage: TokensUsage
    cost_usd: float | None = Field(
        description="USD, the sum over the runs that have a price; null when none has."
    )
    unpriced_runs: int = Field(
        description="Runs that used tokens of a model without a price: `costUsd` leaves them out."
    )

    @classmethod
    def of(cls, row: UsageRow) -> UsageRowOut:
        return cls(
            key=row.key,
            label=row.label,
            runs=row.runs,
            tokens_usage=TokensUsage(
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                total_tokens=row.total_tokens,
                cached_input_tokens=row.cached_input_tokens or None,
            ),
            cost_usd=_dollars(row.cost_usd),
            unpriced_runs=row.unpriced_runs,
        )


def _dollars(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


class UsageReport(OutputModel):
    from_: datetime = Field(alias="from")
    to: datetime
    group_by: GroupBy
    rows: list[UsageRowOut]


class UsageView(ApiView):
    @extend_schema(
        operation_id="usage_get",
        parameters=[*query_parameters(UsageQuery), ENVIRONMENT],
        responses={200: UsageReport},
        tags=["usage"],
        summary="Runs, tokens and cost in a period, by agent, version, caller, model or day",
        description="The caller's own runs in the environment, and every caller's of the "
        "agents it holds AUDIT on, started in [from, to) (at most "
        f"{MAX_SPAN.days} days). Days in order; other groups dearest first.",
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(UsageQuery)
        period = usage_period(start=query.from_, end=query.to, now=timezone.now(), loc=("query",))
        rows = usage_report(
            user=request.user,
            environment=self.environment,
            period=period,
            group_by=query.group_by,
        )
        report = UsageReport(
            from_=period.start,
            to=period.end,
            group_by=query.group_by,
            rows=[UsageRowOut.of(r) for r in rows],
        )
        return render(report)
