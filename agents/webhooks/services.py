"""Writes of webhooks: an agent's endpoints (each URL through the address guard), and a
delivery sent again."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models.functions import Now

from agentbuilder.errors import Loc
from agentbuilder.users import User
from agents.models import Agent, AgentWebhook, DeliveryStatus, WebhookDelivery
from agents.webhooks import dispatch
from agents.webhooks.events import RUN_END_EVENTS, WebhookEvent
from agents.webhooks.guard import webhook_url_check, webhooks_check_enabled


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
    return AgentWebhook.objects.create(
        agent=agent,
        url=url,
        events=_events(events),
        description=description,
        enabled=enabled,
        created_by=user,
    )


def agent_webhook_update(
    *,
    webhook: AgentWebhook,
    url: str | None = None,
    events: Sequence[WebhookEvent] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
    loc: Loc = ("body",),
) -> AgentWebhook:
    """Change what is given; a new URL passes the guard first. Raises Invalid."""
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
    return webhook


def agent_webhook_delete(*, webhook: AgentWebhook) -> None:
    """Remove it; its deliveries stay in the log, and those pending are still sent (their
    event happened while it was subscribed)."""
    webhook.delete()


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
