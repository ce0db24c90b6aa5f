"""The admin of schedules, written through the schedule services as the API's writes are
(the same checks, the same owner rule, beat's rows kept in step). Beat's own pages
(django-celery-beat's periodic tasks and crontabs) are taken out: its rows are the
schedules' to write, and one changed there would no longer match its schedule."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django_celery_beat import admin as beat_admin
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from agentbuilder.admin_forms import ServiceForm, form_for_user, model_fields
from agentbuilder.errors import DomainError
from agentbuilder.scoped_admin import EnvironmentScopedAdmin
from agentbuilder.users import request_user
from agents.access.permissions import Action, agents_with
from agents.admin.forms import ConfigField
from agents.models import Agent, Schedule
from agents.schedules import services

for model in (PeriodicTask, CrontabSchedule, IntervalSchedule, SolarSchedule, ClockedSchedule):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
del beat_admin  # imported so that its registrations come first, and are undone here


class JsonField(ConfigField):
    widget = forms.Textarea(attrs={"rows": 8, "cols": 100, "style": "font-family:monospace"})


class ScheduleForm(ServiceForm):
    agent = forms.ModelChoiceField(queryset=Agent.objects.none())
    cron = forms.CharField(
        max_length=200, help_text="minute hour day-of-month month day-of-week: 0 9 * * 1-5"
    )
    timezone = forms.CharField(max_length=64, initial="UTC", help_text="IANA: Europe/Paris")
    version = forms.CharField(
        max_length=100, initial="latest", help_text="latest, a number or an alias"
    )
    input = JsonField(
        help_text='{"messages": [...]} for tool and RAG agents, {"inputs": {...}} '
        "for task agents: the invoke body each run gets."
    )
    enabled = forms.BooleanField(required=False, initial=True, help_text="Off: paused.")
    webhook = JsonField(required=False, help_text='Optional: {"url": …, "events": […]}.')
    located = {name: name for name in ("cron", "timezone", "version", "input", "webhook")}

    class Meta:
        model = Schedule
        exclude = model_fields(Schedule)  # see ServiceForm

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: Schedule | None = kwargs.get("instance")
        if instance is not None:
            kwargs["initial"] = {
                "agent": instance.agent,
                "cron": instance.cron,
                "timezone": instance.timezone,
                "version": instance.version,
                "input": instance.input,
                "enabled": instance.enabled,
                "webhook": instance.webhook,
                **(kwargs.get("initial") or {}),
            }
        super().__init__(*args, **kwargs)
        agent_field = cast(forms.ModelChoiceField, self.fields["agent"])
        agent_field.queryset = agents_with(self.user, Action.EDIT).order_by("name")
        if instance is not None:
            agent_field.disabled = True  # a schedule stays with its agent

    def apply(self, data: dict[str, Any]) -> Schedule:
        spec = services.ScheduleSpec(
            cron=data["cron"],
            timezone=data["timezone"],
            version=data["version"],
            input=data["input"],
            enabled=data["enabled"],
            webhook=data["webhook"] or None,
        )
        if self.instance._state.adding:  # a new row's uuid is set already
            return services.schedule_create(user=self.user, agent=data["agent"], spec=spec)
        return services.schedule_update(user=self.user, schedule=self.instance, spec=spec)


@admin.register(Schedule)
class ScheduleAdmin(EnvironmentScopedAdmin):
    form = ScheduleForm
    environment_path = "agent__environment"
    list_display = (
        "agent",
        "cron",
        "timezone",
        "version",
        "enabled",
        "owner",
        "last_fired_at",
        "last_error_code",
    )
    list_filter = ("enabled", "agent__environment")
    list_select_related = ("agent", "owner")
    search_fields = ("agent__name", "cron")
    readonly_fields = ("owner", "last_fired_at", "last_error", "created_at", "modified_at")
    actions = ("pause", "resume")

    def get_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        fields = ["agent", "cron", "timezone", "version", "input", "enabled", "webhook"]
        return fields if obj is None else [*fields, *self.readonly_fields]

    def get_readonly_fields(
        self, request: HttpRequest, obj: Schedule | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else self.readonly_fields

    def get_form(
        self, request: HttpRequest, obj: Schedule | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through the services while it validated."""

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        services.schedule_delete(schedule=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            services.schedule_delete(schedule=schedule)

    @admin.display(description="last error")
    def last_error_code(self, schedule: Schedule) -> str:
        return str((schedule.last_error or {}).get("code", "-"))

    @admin.action(description="Pause the selected schedules")
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._set_enabled(request, queryset, False)

    @admin.action(description="Resume the selected schedules")
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._set_enabled(request, queryset, True)

    def _set_enabled(
        self, request: HttpRequest, queryset: QuerySet[Schedule], enabled: bool
    ) -> None:
        user = request_user(request)
        for schedule in queryset.select_related("agent"):
            if not self._may_write(request, schedule):
                continue
            spec = replace(services.spec_of(schedule), enabled=enabled)
            try:
                services.schedule_update(user=user, schedule=schedule, spec=spec)
            except DomainError as exc:
                self.message_user(request, f"{schedule}: {exc.detail}", messages.ERROR)
