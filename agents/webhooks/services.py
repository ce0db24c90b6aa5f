"""Writes of webhooks: an agent's endpoints (each URL through the address guard), and a
delivery sent again."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models.functions import Now

from agentbuilder.errors import Loc
from agentbuilder.users import User
from agents.audit.services import (
    CHANGED,
    audit_record,
    created,
    diff,
    snapshot,
    url_shown,
)
from agents.models import Agent, AgentWebhook, DeliveryStatus, WebhookDelivery
from agents.webhooks import dispatch
from agents.webhooks.events import RUN_END_EVENTS, WebhookEvent
from agents.webhooks.guard import webhook_url_check, webhooks_check_enabled

# What a webhook's records show of it; its URL without the credentials it may carry.
AUDITED_FIELDS = ("agent", "url", "events", "description", "enabled")


def _audited(webhook: AgentWebhook) -> dict[str, object]:
    values = snapshot(webhook, AUDITED_FIELDS)
    return values | {"url": url_shown(webhook.url)}


@transaction.atomic
def agent_webhook_create(
    *,
    user: User,
    agent: Agent,
    url: str,
    events: Sequence[WebhookEvent] = RUN_END_EVENTS,
    description: str = "",
    enabled: bool = True,
    loc: Loc = ("body",),
) -> AgentWebhook:
    """A new webhook of `agent`: every run's `events` go to `url`. Raises Invalid (the URL
    refused by the guard, at `loc` + url; webhooks off)."""
    webhooks_check_enabled((*loc, "url"))
    webhook_url_check(url, (*loc, "url"))
    webhook = AgentWebhook.objects.create(
        agent=agent,
        url=url,
        events=_events(events),
        description=description,
        enabled=enabled,
        created_by=user,
    )
    audit_record(
        user=user,
        action="create",
        obj=webhook,
        object_repr=url_shown(webhook.url),
        environment=agent.environment,
        changes=created(_audited(webhook)),
    )
    return webhook


@transaction.atomic
def agent_webhook_update(
    *,
    user: User | None,
    webhook: AgentWebhook,
    url: str | None = None,
    events: Sequence[WebhookEvent] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
    loc: Loc = ("body",),
) -> AgentWebhook:
    """Change what is given; a new URL passes the guard first. Raises Invalid."""
    before, old_url = _audited(webhook), webhook.url
    if url is not None:
        webhooks_check_enabled((*loc, "url"))
        webhook_url_check(url, (*loc, "url"))
        webhook.url = url
    if events is not None:
        webhook.events = _events(events)
    if description is not None:
        webhook.description = description
    if enabled is not None:
        webhook.enabled = enabled
    webhook.save()
    changed = diff(before, _audited(webhook))
    if webhook.url != old_url and "url" not in changed:  # only its credentials changed
        changed["url"] = {"from": CHANGED, "to": CHANGED}
    if changed:
        audit_record(
            user=user,
            action="update",
            obj=webhook,
            object_repr=url_shown(webhook.url),
            environment=webhook.agent.environment,
            changes=changed,
        )
    return webhook


@transaction.atomic
def agent_webhook_delete(*, user: User | None, webhook: AgentWebhook) -> None:
    """Remove it; its deliveries stay in the log, and those pending are still sent (their
    event happened while it was subscribed)."""
    webhook_id = webhook.pk
    webhook.delete()
    webhook.pk = webhook_id  # the record names the row that went
    audit_record(
        user=user,
        action="delete",
        obj=webhook,
        object_repr=url_shown(webhook.url),
        environment=webhook.agent.environment,
    )


def delivery_resend(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again now, whatever became of it: one more attempt with the same
    `webhook-id` and payload, retried with backoff while its event is under
    WEBHOOK_RETRY_SECONDS old."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.PENDING, next_attempt_at=Now(), delivered_at=None
    )
    dispatch.wake()


def _events(events: Sequence[WebhookEvent]) -> list[str]:
    return sorted({str(e) for e in events})
