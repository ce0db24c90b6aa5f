"""Webhooks in the admin: an agent's webhooks (written through the services, so through the
address guard), every delivery with its attempts and a "send again" action, scoped by the
environment's grants as the API is (READ sees, EDIT changes and sends again)."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from agentbuilder.admin_forms import form_for_user, model_fields
from agentbuilder.scoped_admin import EnvironmentScopedAdmin
from agentbuilder.users import request_user
from agents.access.permissions import Action, agents_with, environments_with
from agents.admin.forms import PRE_STYLE, ServiceForm
from agents.models import Agent, AgentWebhook, Environment, WebhookDelivery
from agents.webhooks import services
from agents.webhooks.delivery import message_id
from agents.webhooks.events import RUN_END_EVENTS, WebhookEvent
from agents.webhooks.secret import environment_secret_rotate


class AgentWebhookForm(ServiceForm):
    agent = forms.ModelChoiceField(queryset=Agent.objects.none())
    url = forms.CharField(max_length=2000, help_text="http(s); passes the address guard.")
    events = forms.MultipleChoiceField(
        choices=[(str(e), str(e)) for e in WebhookEvent],
        initial=[str(e) for e in RUN_END_EVENTS],
        widget=forms.CheckboxSelectMultiple,
    )
    description = forms.CharField(max_length=200, required=False)
    enabled = forms.BooleanField(required=False, initial=True)
    located = {"url": "url", "events": "events"}

    class Meta:
        model = AgentWebhook
        exclude = model_fields(AgentWebhook)  # see ServiceForm

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: AgentWebhook | None = kwargs.get("instance")
        if instance is not None:
            kwargs["initial"] = {
                "agent": instance.agent,
                "url": instance.url,
                "events": list(instance.events),
                "description": instance.description,
                "enabled": instance.enabled,
                **(kwargs.get("initial") or {}),
            }
        super().__init__(*args, **kwargs)
        agent_field = cast(forms.ModelChoiceField, self.fields["agent"])
        agent_field.queryset = agents_with(self.user, Action.EDIT).filter(deleted_at__isnull=True)
        if instance is not None:
            agent_field.disabled = True  # a webhook stays with its agent

    def apply(self, data: dict[str, Any]) -> AgentWebhook:
        events = [WebhookEvent(e) for e in data["events"]]
        if self.instance._state.adding:
            return services.agent_webhook_create(
                user=self.user,
                agent=data["agent"],
                url=data["url"],
                events=events,
                description=data["description"],
                enabled=data["enabled"],
            )
        return services.agent_webhook_update(
            user=self.user,
            webhook=self.instance,
            url=data["url"],
            events=events,
            description=data["description"],
            enabled=data["enabled"],
        )


@admin.register(AgentWebhook)
class AgentWebhookAdmin(EnvironmentScopedAdmin):
    environment_path = "agent__environment"
    form = AgentWebhookForm
    list_display = ("url", "agent", "event_list", "enabled", "created_at")
    list_filter = ("enabled",)
    list_select_related = ("agent",)
    search_fields = ("url", "description", "agent__name")
    fields = ("agent", "url", "events", "description", "enabled")

    def get_form(
        self,
        request: HttpRequest,
        obj: AgentWebhook | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: AgentWebhook, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through the services while it validated."""

    # Through the services, so that each removal is in the audit log (agents.audit).
    def delete_model(self, request: HttpRequest, obj: AgentWebhook) -> None:
        services.agent_webhook_delete(user=request_user(request), webhook=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AgentWebhook]) -> None:
        for webhook in queryset.select_related("agent__environment"):
            services.agent_webhook_delete(user=request_user(request), webhook=webhook)

    @admin.display(description="events")
    def event_list(self, webhook: AgentWebhook) -> str:
        return ", ".join(webhook.events)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(EnvironmentScopedAdmin):
    """The delivery log: read-only; EDIT on its environment may send a delivery again."""

    list_display = (
        "event",
        "url",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "created_at",
        "run",
    )
    list_filter = ("status", "event", "format", "environment")
    list_select_related = ("environment",)
    search_fields = ("url", "key")
    actions = ("send_again",)
    fields = (
        "webhook_id",
        "event",
        "format",
        "url",
        "status",
        "attempts",
        "next_attempt_at",
        "last_attempt_at",
        "last_status_code",
        "last_response",
        "last_error",
        "attempt_history",
        "payload_shown",
        "run",
        "agent_webhook",
        "push_config",
        "environment",
        "created_at",
        "delivered_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # deliveries are made by events

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a log; "send again" is its one write

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> Any:
        # Django hides actions from a user who may change nothing; this one asks EDIT per row.
        actions = super().get_actions(request)
        if "send_again" not in actions:
            actions["send_again"] = self.get_action("send_again")
        return actions

    @admin.action(description="Send again")
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        user = request_user(request)
        writable = set(environments_with(user, Action.EDIT).values_list("pk", flat=True))
        sent = skipped = 0
        for delivery in queryset:
            if user.is_superuser or delivery.environment_id in writable:
                services.delivery_resend(delivery=delivery)
                sent += 1
            else:
                skipped += 1
        self.message_user(request, f"{sent} delivery(ies) will be sent again shortly.")
        if skipped:
            self.message_user(
                request,
                f"{skipped} skipped: sending again needs EDIT on the environment.",
                messages.WARNING,
            )

    @admin.display(description="webhook-id")
    def webhook_id(self, delivery: WebhookDelivery) -> str:
        return message_id(delivery.pk)

    @admin.display(description="attempts")
    def attempt_history(self, delivery: WebhookDelivery) -> str:
        return _pre(delivery.history)

    @admin.display(description="payload")
    def payload_shown(self, delivery: WebhookDelivery) -> str:
        if delivery.payload is None:
            return "(made at its first attempt)"
        return _pre(delivery.payload)


def _pre(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return format_html('<pre style="{}">{}</pre>', PRE_STYLE, text)


@admin.action(description="Rotate the webhook signing secret (shown once)")
def rotate_webhook_secret(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Environment]
) -> None:
    """For EnvironmentAdmin (agents.access.admin): the new secret is shown in this answer's
    message and nowhere else."""
    user = request_user(request)
    writable = set(environments_with(user, Action.EDIT).values_list("pk", flat=True))
    for environment in queryset:
        if not (user.is_superuser or environment.pk in writable):
            modeladmin.message_user(
                request, f"{environment}: rotating needs EDIT on it.", messages.WARNING
            )
            continue
        secret = environment_secret_rotate(environment_id=environment.pk, user=user)
        modeladmin.message_user(
            request,
            f"New webhook secret of {environment} (copy it now, it is not shown again): {secret}",
            messages.SUCCESS,
        )
