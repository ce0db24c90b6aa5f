"""Budgets in the admin: each with this period's spend as a progress bar, made and changed
through the services (so with the API's checks), scoped by the environment's grants as the
API is; the page warns of every budget at 80 % or more of a limit."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import Case, DecimalField, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from agentbuilder.admin_forms import form_for_user, model_fields
from agentbuilder.errors import Invalid
from agentbuilder.scoped_admin import EnvironmentScopedAdmin, writable
from agentbuilder.users import request_user
from agents.access.permissions import Action, agents_with, environments_with
from agents.admin.forms import ServiceForm
from agents.budgets import selectors, services
from agents.budgets.limits import Spent
from agents.budgets.periods import period_start
from agents.budgets.selectors import budget_limits
from agents.models import (
    Agent,
    APIClient,
    Budget,
    BudgetAction,
    BudgetPeriod,
    BudgetScope,
    BudgetSpend,
    Environment,
)

TARGETS = {
    BudgetScope.AGENT: "agent",
    BudgetScope.USER: "user",
    BudgetScope.API_CLIENT: "api_client",
}


class BudgetForm(ServiceForm):
    environment = forms.ModelChoiceField(queryset=Environment.objects.all())
    scope = forms.ChoiceField(choices=BudgetScope.choices)
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(), required=False, help_text="For an agent budget."
    )
    # Not `user`: a service form's `user` is whoever submits it.
    limited_user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True),
        required=False,
        label="User",
        help_text="For a user budget: that user's runs in the environment.",
    )
    api_client = forms.ModelChoiceField(
        queryset=APIClient.objects.all(), required=False, help_text="For an API client budget."
    )
    period = forms.ChoiceField(choices=BudgetPeriod.choices, help_text="UTC days or months.")
    limit_usd = forms.DecimalField(required=False, label="Limit (USD)")
    limit_tokens = forms.IntegerField(required=False, label="Limit (tokens)")
    action = forms.ChoiceField(choices=BudgetAction.choices)
    description = forms.CharField(max_length=200, required=False)
    located = {
        "scope": "scope",
        "period": "period",
        "limitUsd": "limit_usd",
        "limitTokens": "limit_tokens",
        "action": "action",
        **{field: field for field in TARGETS.values()},
    }

    class Meta:
        model = Budget
        exclude = model_fields(Budget)  # see ServiceForm

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: Budget | None = kwargs.get("instance")
        if instance is not None and not instance._state.adding:
            kwargs["initial"] = {
                "environment": instance.environment,
                "scope": instance.scope,
                "agent": instance.agent,
                "limited_user": instance.user,
                "api_client": instance.api_client,
                "period": instance.period,
                "limit_usd": instance.limit_usd,
                "limit_tokens": instance.limit_tokens,
                "action": instance.action,
                "description": instance.description,
                **(kwargs.get("initial") or {}),
            }
        super().__init__(*args, **kwargs)
        environment = cast(forms.ModelChoiceField, self.fields["environment"])
        writable(environment, self.user)
        environment.required = True
        agent = cast(forms.ModelChoiceField, self.fields["agent"])
        agent.queryset = agents_with(self.user, Action.EDIT)
        client = cast(forms.ModelChoiceField, self.fields["api_client"])
        environments = cast(QuerySet[Environment], environment.queryset)
        client.queryset = APIClient.objects.filter(environment__in=environments)
        if instance is not None and not instance._state.adding:
            environment.disabled = True  # a budget stays in its environment

    def apply(self, data: dict[str, Any]) -> Budget:
        scope = data["scope"]
        target = data.get(TARGETS[scope]) if scope in TARGETS else None
        fields = services.BudgetFields(
            scope=scope,
            target=None if target is None else str(target.pk),
            period=data["period"],
            limit_usd=data["limit_usd"],
            limit_tokens=data["limit_tokens"],
            action=data["action"],
            description=data["description"],
        )
        if scope in TARGETS and target is None:
            raise Invalid.at((TARGETS[scope],), f"choose the {scope} it limits")
        if self.instance._state.adding:
            return services.budget_create(
                user=self.user, environment=data["environment"], fields=fields
            )
        return services.budget_update(user=self.user, budget=self.instance, fields=fields)


@admin.register(Budget)
class BudgetAdmin(EnvironmentScopedAdmin):
    form = BudgetForm
    list_display = ("scope_shown", "environment", "period", "action", "limits", "spent_bar")
    list_filter = ("environment", "scope", "period", "action")
    list_select_related = ("environment", "agent", "user", "api_client")
    search_fields = ("description", "agent__name", "user__username", "api_client__name")
    fields = (
        "environment",
        "scope",
        "agent",
        "limited_user",
        "api_client",
        "period",
        "limit_usd",
        "limit_tokens",
        "action",
        "description",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Budget]:
        # This period's spend in the list's one query: the row of the day or of the month.
        now = datetime.now(UTC)
        start = Case(
            When(budget__period=BudgetPeriod.DAY, then=Value(period_start("day", now))),
            default=Value(period_start("month", now)),
        )
        spend = BudgetSpend.objects.filter(budget=OuterRef("pk"), period_start=start)
        money = DecimalField(max_digits=18, decimal_places=10)
        user = request_user(request)
        rows = super().get_queryset(request)
        if not user.is_superuser:  # EDIT on the environment, as the API asks
            rows = rows.filter(environment__in=environments_with(user, Action.EDIT))
        return rows.annotate(
            spent_usd=Coalesce(
                Subquery(spend.values("spent_usd")), Value(Decimal(0)), output_field=money
            ),
            spent_tokens=Coalesce(Subquery(spend.values("spent_tokens")), Value(0)),
        )

    def get_form(
        self, request: HttpRequest, obj: Budget | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    # Django's model permissions are not asked: EDIT on the environment is the rule (the
    # queryset keeps only those budgets; the scoped admin checks each change).
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        user = request_user(request)
        return self.has_module_permission(request) and (
            user.is_superuser or environments_with(user, Action.EDIT).exists()
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request) and (
            obj is None or self._may_write(request, obj)
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Budget, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through the services while it validated."""

    def delete_model(self, request: HttpRequest, obj: Budget) -> None:
        services.budget_delete(user=request_user(request), budget=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Budget]) -> None:
        for budget in queryset.select_related("environment"):  # each in the audit log
            services.budget_delete(user=request_user(request), budget=budget)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if request.method == "GET":
            for near in selectors.budgets_near_limit(user=request_user(request)):
                level = messages.ERROR if near.used >= 1 else messages.WARNING
                self.message_user(request, _warning(near), level)
        return super().changelist_view(request, extra_context)

    @admin.display(description="scope")
    def scope_shown(self, budget: Budget) -> str:
        target = budget.agent or budget.user or budget.api_client or budget.environment
        return f"{budget.scope}: {target}"

    @admin.display(description="limits")
    def limits(self, budget: Budget) -> str:
        said = []
        if budget.limit_usd is not None:
            said.append(f"{budget.limit_usd.normalize():f} USD")
        if budget.limit_tokens is not None:
            said.append(f"{budget.limit_tokens:,} tokens")
        return " · ".join(said)

    @admin.display(description="this period")
    def spent_bar(self, budget: Budget) -> str:
        spent = Spent(budget.spent_usd, budget.spent_tokens)  # type: ignore[attr-defined]
        used = budget_limits(budget).used(spent)
        percent = round(used * 100)
        color = "#2e7d32" if percent < 80 else "#ef6c00" if percent < 100 else "#c62828"
        return format_html(
            '<div class="budget-bar" data-used="{}" title="{}" style="width:160px;'
            "background:#e0e0e0;border-radius:3px;height:14px;display:inline-block;"
            'vertical-align:middle"><div style="width:{}%;background:{};height:14px;'
            'border-radius:3px"></div></div> <span class="budget-used">{} %</span> '
            '<span class="budget-spent">{}</span>',
            f"{used:.4f}",
            f"{percent} % of the nearer limit",
            min(percent, 100),
            color,
            percent,
            _spent_text(budget, spent),
        )


def _spent_text(budget: Budget, spent: Spent) -> str:
    said = []
    if budget.limit_usd is not None:
        said.append(f"{spent.usd:.4f} USD")
    if budget.limit_tokens is not None:
        said.append(f"{spent.tokens:,} tokens")
    return " · ".join(said)


def _warning(near: selectors.BudgetNow) -> str:
    budget = near.budget
    target = budget.agent or budget.user or budget.api_client or budget.environment
    return (
        f"The {budget.scope} budget of {target} ({budget.environment.name}, per "
        f"{budget.period}, {budget.action}) is at {round(near.used * 100)} % of its limit "
        "this period."
    )
