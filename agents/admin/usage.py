"""The usage page (docs/architecture.md#usage): what the runs a staff user may see spent in
a period, in one environment or all; cost and tokens per day, the top agents, versions,
callers and models as charts, and every group in tables under them.

It reads what GET /v1/usage reads (agents.selectors.usage), scoped the same way: a user's
own runs and every caller's of the agents it holds AUDIT on (a superuser's: all)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from agentbuilder.errors import Invalid
from agentbuilder.users import User, request_user
from agents.access.permissions import Action, may
from agents.evals.charts import Point, bar_chart, line_chart
from agents.models import Agent, Environment, RunUsage
from agents.selectors.storage import table_sizes
from agents.selectors.usage import (
    DEFAULT_SPAN,
    GroupBy,
    Period,
    UsageRow,
    usage_period,
    usage_report,
)

TOP = 10  # the bars of each "top" chart; the tables list every group
PRESETS = (7, 30, 90, 365)  # days, as links above the form


class UsageFilter(forms.Form):
    environment = forms.ModelChoiceField(
        queryset=Environment.objects.none(), required=False, empty_label="All environments"
    )
    start = forms.DateField(
        label="From", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        label="To", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        seen = Agent.objects.filter(
            may(user, Action.READ, Action.INVOKE, Action.AUDIT), deleted_at__isnull=True
        )
        field = self.fields["environment"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = Environment.objects.filter(pk__in=seen.values("environment"))

    def period(self, now: datetime) -> Period | None:
        """The period asked (default: the last 30 days, today included); None, with the
        error at its field, when it is no period."""
        data = self.cleaned_data
        end = data.get("end") or now.astimezone(UTC).date()
        start = data.get("start") or end - DEFAULT_SPAN + timedelta(days=1)
        try:
            return usage_period(start=start, end=end, now=now)
        except Invalid as exc:
            for error in exc.errors:
                self.add_error("start" if error.loc[-1] == "from" else "end", error.msg)
            return None


@admin.register(RunUsage)
class UsageAdmin(admin.ModelAdmin):
    """The app list's "Usage": the usage page, and nothing else (the proxy's rows are runs,
    which RunAdmin shows to whom may read them)."""

    def get_urls(self) -> list[URLPattern]:
        page = self.admin_site.admin_view(self.changelist_view)
        return [path("", page, name="agents_runusage_changelist")]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        return usage_page(self.admin_site, request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[RunUsage]:
        return super().get_queryset(request).none()

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Every staff user has runs of its own (the playground's); the report narrows.
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def usage_page(site: admin.AdminSite, request: HttpRequest) -> TemplateResponse:
    user = request_user(request)
    form = UsageFilter(request.GET, user=user)  # every field may be left empty
    now = timezone.now()
    period = form.period(now) if form.is_valid() else None
    context: dict[str, Any] = {
        **site.each_context(request),
        "title": "Usage",
        "opts": RunUsage._meta,
        "form": form,
        "presets": _presets(request, now),
    }
    if period is not None:
        context.update(_report(user, period, form.cleaned_data.get("environment")))
    if user.is_superuser:
        # Platform-wide, not narrowed to what the user may see: a superuser's only.
        context["storage"] = table_sizes()
        context["retention_days"] = settings.RUN_RETENTION_DAYS
    return TemplateResponse(request, "admin/agents/usage/page.html", context)


def _presets(request: HttpRequest, now: datetime) -> list[tuple[str, str]]:
    today = now.astimezone(UTC).date()
    environment = request.GET.get("environment")
    kept = {"environment": environment} if environment else {}
    return [
        (
            f"Last {days} days",
            "?"
            + urlencode(
                {**kept, "start": str(today - timedelta(days=days - 1)), "end": str(today)}
            ),
        )
        for days in PRESETS
    ]


@dataclass(frozen=True)
class Table:
    name: GroupBy
    title: str
    rows: list[dict[str, Any]]


GROUP_TITLES: dict[GroupBy, str] = {
    "agent": "Agents",
    "version": "Versions",
    "caller": "Callers",
    "model": "Models",
}


def _report(user: User, period: Period, environment: Environment | None) -> dict[str, Any]:
    days = usage_report(user=user, period=period, group_by="day", environment=environment)
    groups = {
        group: usage_report(user=user, period=period, group_by=group, environment=environment)
        for group in GROUP_TITLES
    }
    total = _total(days)
    charts = [
        *_day_charts(period, days),
        *(
            SafeString(  # charts.bar_chart escapes every label it draws
                bar_chart(
                    [_bar(group, row) for row in rows[:TOP]],
                    title=f"Top {GROUP_TITLES[group].lower()} (USD)",
                    fmt=_usd,
                    css_class=f"chart-top-{group}",
                )
            )
            for group, rows in groups.items()
        ),
    ]
    tables = [
        Table(group, GROUP_TITLES[group], [_row(group, r) for r in rows])
        for group, rows in groups.items()
    ]
    return {
        "period": period,
        "last_day": period.end - timedelta(microseconds=1),
        "total": total,
        "charts": charts,
        "tables": tables,
        "day_rows": [_row("day", r) for r in days],
    }


def _total(days: list[UsageRow]) -> dict[str, Any]:
    priced = [r.cost_usd for r in days if r.cost_usd is not None]
    return {
        "runs": sum(r.runs for r in days),
        "tokens": sum(r.total_tokens for r in days),
        "cost": dollars(sum(priced, Decimal(0)) if priced else None),
        "unpriced_runs": sum(r.unpriced_runs for r in days),
    }


def _day_charts(period: Period, days: list[UsageRow]) -> list[SafeString]:
    """Cost and tokens on every day of the period, those without runs at 0."""
    by_day = {r.key: r for r in days}
    first, last = period.start.date(), (period.end - timedelta(microseconds=1)).date()
    cost, tokens = [], []
    for offset in range((last - first).days + 1):
        day = first + timedelta(days=offset)
        row = by_day.get(day.isoformat())
        label = f"{day:%m-%d}"
        note = f"{day:%Y-%m-%d}" + (f" · {row.runs} runs" if row else "")
        if row is None:
            spent: float | None = 0.0
        else:  # a day whose runs all lack a price is a gap, not a zero
            spent = None if row.cost_usd is None else float(row.cost_usd)
        cost.append(Point(label=label, value=spent, note=note))
        tokens.append(Point(label=label, value=float(row.total_tokens if row else 0), note=note))
    return [
        SafeString(line_chart(cost, title="Cost per day (USD)", fmt=_usd, css_class="chart-cost")),
        SafeString(
            line_chart(
                tokens, title="Tokens per day", fmt=lambda v: f"{v:,.0f}", css_class="chart-tokens"
            )
        ),
    ]


def _bar(group: GroupBy, row: UsageRow) -> Point:
    return Point(
        label=row.label or row.key or "(deleted user)",
        value=None if row.cost_usd is None else float(row.cost_usd),
        note=f"{row.runs} runs · {row.total_tokens:,} tokens",
        href=_link(group, row.key),
    )


def _row(group: GroupBy, row: UsageRow) -> dict[str, Any]:
    return {
        "key": row.key,
        "label": row.label or row.key or "(deleted user)",
        "href": _link(group, row.key),
        "runs": row.runs,
        "input": row.input_tokens,
        "output": row.output_tokens,
        "cached": row.cached_input_tokens,
        "total": row.total_tokens,
        "cost": dollars(row.cost_usd),
        "unpriced_runs": row.unpriced_runs,
    }


def _link(group: GroupBy, key: str | None) -> str:
    """The page of what a row adds up: the agent, the version, the model, a caller's runs."""
    if key is None or group == "day":
        return ""
    if group == "caller":
        return reverse("admin:agents_run_changelist") + "?" + urlencode({"caller__id__exact": key})
    page = {"agent": "agent", "version": "agentversion", "model": "llmmodel"}[group]
    return reverse(f"admin:agents_{page}_change", args=[key])


def _usd(value: float) -> str:
    return f"${value:.4g}"


def dollars(value: Decimal | float | None) -> str:
    """A cost as the admin shows it (runs list, run page, usage): "-" when unknown."""
    if value is None:
        return "-"
    shown = f"{float(value):,.6f}".rstrip("0").rstrip(".")
    return "< $0.000001" if shown == "0" and value > 0 else f"${shown}"
