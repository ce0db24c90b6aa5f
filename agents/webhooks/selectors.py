"""Reads of webhooks: an agent's endpoints, and deliveries."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from agentbuilder.errors import NotFound
from agents.models import Agent, AgentWebhook


def agent_webhook_list(*, agent: Agent) -> QuerySet[AgentWebhook]:
    """The agent's webhooks, oldest first (the caller's READ on it checked before)."""
    return agent.webhooks.all()


def agent_webhook_get(*, agent: Agent, webhook_id: uuid.UUID) -> AgentWebhook:
    """One of the agent's webhooks. Raises NotFound."""
    webhook = agent.webhooks.filter(pk=webhook_id).first()
    if webhook is None:
        raise NotFound(f"Webhook '{webhook_id}' of agent '{agent.name}' not found.")
    return webhook
