"""Webhooks in the admin (agents/webhooks/admin.py): the delivery log with its attempts and
"send again", an agent's webhooks through the address guard, and the environment's secret
rotated and shown once."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import AgentWebhook, Environment, WebhookDelivery
from agents.webhooks.delivery import deliveries_send_due, message_id
from agents.webhooks.secret import environment_secret
from tests.support.admin import staff_with
from tests.support.native import invoke
from tests.support.webhooks import Receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

LOG = "/admin/agents/webhookdelivery/"
ASK = {"messages": [{"role": "user", "content": "What is 2 + 3?"}]}


def _delivered(owner_client: APIClient, make_agent: Any, receiver: Receiver) -> WebhookDelivery:
    agent = make_agent()
    invoke(owner_client, agent, "invoke", {**ASK, "webhook": {"url": receiver.url}})
    assert deliveries_send_due() == 1
    return WebhookDelivery.objects.get()


def test_the_log_lists_each_delivery_with_its_attempts_and_sends_one_again(
    client: Any, admin_user: Any, owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    delivery = _delivered(owner_client, make_agent, receiver)
    client.force_login(admin_user)
    listing = client.get(LOG).content.decode()
    assert receiver.url in listing
    assert "run.completed" in listing
    assert "delivered" in listing
    page = client.get(f"{LOG}{delivery.pk}/change/").content.decode()
    assert message_id(delivery.pk) in page
    assert "&quot;statusCode&quot;: 200" in page  # the attempt, listed

    sent = client.post(LOG, {"action": "send_again", "_selected_action": [str(delivery.pk)]})
    assert sent.status_code == 302
    delivery.refresh_from_db()
    assert (delivery.status, delivery.delivered_at) == ("pending", None)
    assert deliveries_send_due() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    first, again = receiver.received
    assert first.headers["webhook-id"] == again.headers["webhook-id"]
    assert first.body == again.body


def test_sending_again_needs_edit_on_the_environment(
    client: Any, env: Environment, owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    delivery = _delivered(owner_client, make_agent, receiver)
    viewer = staff_with("view_webhookdelivery")
    grant(viewer, Action.READ, env)
    client.force_login(viewer)
    assert receiver.url in client.get(LOG).content.decode()
    answer = client.post(
        LOG, {"action": "send_again", "_selected_action": [str(delivery.pk)]}, follow=True
    )
    assert "needs EDIT" in answer.content.decode()
    delivery.refresh_from_db()
    assert delivery.status == "delivered"


def test_an_agents_webhook_is_added_through_the_address_guard(
    client: Any, admin_user: Any, make_agent: Any, receiver: Receiver
) -> None:
    agent = make_agent()
    client.force_login(admin_user)
    form = {"agent": str(agent.pk), "url": "http://10.0.0.1/hook", "events": ["run.failed"]}
    refused = client.post("/admin/agents/agentwebhook/add/", form)
    assert "a private address" in refused.content.decode()
    assert not AgentWebhook.objects.exists()
    added = client.post("/admin/agents/agentwebhook/add/", {**form, "url": receiver.url})
    assert added.status_code == 302, added.content.decode()[-2000:]
    assert AgentWebhook.objects.get().events == ["run.failed"]


def test_rotating_the_secret_shows_it_once(client: Any, admin_user: Any, env: Environment) -> None:
    client.force_login(admin_user)
    answer = client.post(
        "/admin/agents/environment/",
        {"action": "rotate_webhook_secret", "_selected_action": [str(env.pk)]},
        follow=True,
    )
    secret = environment_secret(environment_id=env.pk)
    assert secret in answer.content.decode()
    assert secret not in client.get("/admin/agents/environment/").content.decode()
