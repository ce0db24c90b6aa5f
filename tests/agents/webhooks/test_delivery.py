"""Deliveries (agents/webhooks/delivery.py) to a real receiver on 127.0.0.1: made by the
database with every way a run ends, signed as Standard Webhooks (verified with the
library's own `Webhook.verify`), retried with backoff, given up after the retry window,
and sent once each though the receiver was down for a while."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db.models.functions import Now
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import Agent, AgentWebhook, Run, RunStatus, WebhookDelivery
from agents.runs.leases import run_close_canceled, runs_interrupt_expired
from agents.webhooks.delivery import backoff_seconds, deliveries_send_due, message_id
from agents.webhooks.secret import environment_secret_rotate
from tests.support.native import invoke
from tests.support.webhooks import Receiver, deliver_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

ASK = {"messages": [{"role": "user", "content": "What is 2 + 3?"}]}


def _open_run(agent: Agent) -> Run:
    """A run in progress whose process is gone (its lease ran out)."""
    version = agent.versions.get()
    return Run.objects.create(
        agent=agent,
        version=version,
        protocol="native",
        status=RunStatus.IN_PROGRESS,
        lease_until=timezone.now() - timedelta(seconds=5),
    )


def test_a_body_webhook_gets_the_run_completed_signed_with_the_environment_secret(
    owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    agent = make_agent()
    secret = environment_secret_rotate(environment_id=agent.environment_id)
    answer = invoke(owner_client, agent, "invoke", {**ASK, "webhook": {"url": receiver.url}})
    assert answer.status == 200

    assert deliveries_send_due() == 1
    (got,) = receiver.received
    payload = got.verified(secret)
    assert payload["type"] == "run.completed"
    assert payload["data"]["id"] == answer.run_id
    assert payload["data"]["status"] == "completed"
    assert payload["data"]["output"] == answer.body["output"][0]["content"][0]["text"]
    delivery = WebhookDelivery.objects.get()
    assert got.headers["webhook-id"] == message_id(delivery.pk)
    assert got.headers["webhook-signature"].startswith("v1,")
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)
    assert deliveries_send_due() == 0  # nothing is sent twice


def test_an_event_the_webhook_did_not_ask_for_is_not_sent(
    owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    agent = make_agent()
    body = {**ASK, "webhook": {"url": receiver.url, "events": ["run.failed"]}}
    assert invoke(owner_client, agent, "invoke", body).status == 200
    assert not WebhookDelivery.objects.exists()
    assert Run.objects.get().webhook == {"url": receiver.url, "events": ["run.failed"]}


def test_a_run_with_no_webhook_makes_no_delivery(owner_client: APIClient, make_agent: Any) -> None:
    agent = make_agent()
    assert invoke(owner_client, agent, "invoke", ASK).status == 200
    assert not WebhookDelivery.objects.exists()


def test_a_receiver_answering_500_gets_it_again_after_a_backoff_with_the_same_id(
    owner_client: APIClient, make_agent: Any, settings: Any
) -> None:
    receiver = Receiver(statuses=(500, 503)).start()
    try:
        agent = make_agent()
        secret = environment_secret_rotate(environment_id=agent.environment_id)
        AgentWebhook.objects.create(agent=agent, url=receiver.url, events=["run.completed"])
        assert invoke(owner_client, agent, "invoke", ASK).status == 200

        assert deliveries_send_due() == 1
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
            "pending",
            1,
            500,
        )
        assert delivery.last_response == "try again later"
        assert delivery.next_attempt_at is not None
        assert delivery.next_attempt_at > delivery.last_attempt_at  # backed off
        deliver_all()
    finally:
        receiver.stop()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    assert [h["statusCode"] for h in delivery.history] == [500, 503, 200]
    assert len(receiver.received) == 3
    assert {r.headers["webhook-id"] for r in receiver.received} == {message_id(delivery.pk)}
    payloads = [r.verified(secret) for r in receiver.received]
    assert payloads[0] == payloads[1] == payloads[2]


def test_the_backoff_doubles_up_to_its_ceiling(settings: Any) -> None:
    settings.WEBHOOK_BACKOFF_SECONDS = 5
    settings.WEBHOOK_BACKOFF_MAX_SECONDS = 3600
    assert [backoff_seconds(n) for n in (1, 2, 3, 4)] == [5, 10, 20, 40]
    assert backoff_seconds(30) == 3600


def test_a_delivery_is_given_up_once_its_retry_window_has_passed(
    owner_client: APIClient, make_agent: Any, settings: Any
) -> None:
    settings.WEBHOOK_RETRY_SECONDS = 0
    receiver = Receiver(statuses=(500,)).start()
    try:
        agent = make_agent()
        AgentWebhook.objects.create(agent=agent, url=receiver.url, events=["run.completed"])
        assert invoke(owner_client, agent, "invoke", ASK).status == 200
        assert deliveries_send_due() == 1
    finally:
        receiver.stop()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.next_attempt_at) == ("failed", None)
    assert deliveries_send_due() == 0


def test_runs_closed_by_sweeps_deliver_their_event_once(make_agent: Any) -> None:
    agent = make_agent()
    AgentWebhook.objects.create(
        agent=agent, url="http://127.0.0.1:9/hook", events=["run.failed", "run.canceled"]
    )
    interrupted, canceled = _open_run(agent), _open_run(agent)
    canceled.lease_until = None
    canceled.save()
    assert run_close_canceled(canceled.pk) == 1
    assert runs_interrupt_expired() == 1
    # A second write of an ended run (a late own end, an admin's verdict) makes nothing.
    Run.objects.filter(pk=interrupted.pk).update(status=RunStatus.COMPLETED, completed_at=Now())
    made = {(d.run_id, d.event) for d in WebhookDelivery.objects.all()}
    assert made == {(interrupted.pk, "run.failed"), (canceled.pk, "run.canceled")}


def test_a_disabled_agent_webhook_gets_nothing(make_agent: Any) -> None:
    agent = make_agent()
    AgentWebhook.objects.create(
        agent=agent, url="http://127.0.0.1:9/hook", events=["run.failed"], enabled=False
    )
    _open_run(agent)
    assert runs_interrupt_expired() == 1
    assert not WebhookDelivery.objects.exists()


def test_a_receiver_down_then_up_gets_every_event_once_signed(
    owner_client: APIClient, make_agent: Any
) -> None:
    """The fault of issue 27: the receiver's port is closed while runs end, then opens."""
    agent = make_agent()
    secret = environment_secret_rotate(environment_id=agent.environment_id)
    receiver = Receiver()  # not started: its port is closed
    AgentWebhook.objects.create(
        agent=agent, url=receiver.url, events=["run.completed", "run.failed", "run.canceled"]
    )
    body = {**ASK, "webhook": {"url": receiver.url}}
    completed = [invoke(owner_client, agent, "invoke", body).run_id for _ in range(3)]
    interrupted = _open_run(agent)
    assert runs_interrupt_expired() == 1
    expected = {(run_id, "run.completed") for run_id in completed}
    expected.add((str(interrupted.pk), "run.failed"))
    # 3 runs x 2 endpoints (the body's and the agent's) + 1 sweep-closed run x the agent's.
    assert WebhookDelivery.objects.count() == 7

    refused = 0
    while refused < 14:  # every delivery refused twice at least: the port is closed
        refused += deliveries_send_due()
    assert not WebhookDelivery.objects.exclude(status="pending").exists()
    assert all(d.last_error for d in WebhookDelivery.objects.all())

    receiver.start()
    try:
        deliver_all()
    finally:
        receiver.stop()
    assert WebhookDelivery.objects.filter(status="delivered").count() == 7
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert len(ids) == len(set(ids)) == 7  # each once
    seen = [r.verified(secret) for r in receiver.received]
    assert sorted((p["data"]["id"], p["type"]) for p in seen) == sorted(
        [*expected, *((run_id, "run.completed") for run_id in completed)]
    )


def test_the_webhook_id_is_the_same_for_the_same_run_event_and_endpoint(make_agent: Any) -> None:
    agent = make_agent()
    webhook = AgentWebhook.objects.create(
        agent=agent, url="http://127.0.0.1:9/hook", events=["run.failed"]
    )
    run = _open_run(agent)
    runs_interrupt_expired()
    delivery = WebhookDelivery.objects.get()
    assert delivery.key == f"{run.pk}:run.failed:agent:{webhook.pk}"
    import hashlib

    assert delivery.pk == uuid.UUID(hashlib.md5(delivery.key.encode()).hexdigest())  # noqa: S324
