"""Webhooks in the API (agents/webhooks/views.py): an agent's webhooks created, read,
changed and deleted by who may, URLs the address guard refuses answered 400 at their path
(no traffic ever sent to them, nothing written), the body's `webhook` on the invoke,
respond and process routes, and the environment's secret shown once per rotation."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import AgentWebhook, Environment, Run, WebhookDelivery
from agents.webhooks.secret import environment_secret
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.native import read_stream
from tests.support.webhooks import Receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

ASK = [{"role": "user", "content": "What is 2 + 3?"}]
# Refused by the guard without a DNS lookup and never contacted: a private address, a
# link-local one (cloud metadata), a loopback one the settings do not allow.
REFUSED = ["http://10.1.2.3/hook", "http://169.254.169.254/latest", "http://[::1]:9/hook"]


def test_the_owner_creates_lists_changes_and_deletes_an_agents_webhook(
    owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    agent = make_agent()
    base = f"/v1/agents/{agent.pk}/webhooks"
    created = owner_client.post(base, {"url": receiver.url}, format="json")
    assert created.status_code == 201, created.json()
    hook = created.json()
    assert hook["events"] == ["run.canceled", "run.completed", "run.failed"]
    assert hook["agentId"] == str(agent.pk)
    assert hook["enabled"] is True

    listed = owner_client.get(base).json()["webhooks"]
    assert [w["id"] for w in listed] == [hook["id"]]
    changed = owner_client.patch(
        f"{base}/{hook['id']}", {"events": ["run.failed"], "enabled": False}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["events"], changed.json()["enabled"]) == (["run.failed"], False)
    assert owner_client.get(f"{base}/{hook['id']}").json()["url"] == receiver.url

    assert owner_client.delete(f"{base}/{hook['id']}").status_code == 204
    assert owner_client.get(f"{base}/{hook['id']}").status_code == 404
    assert not AgentWebhook.objects.exists()


def test_read_lists_webhooks_but_only_edit_changes_them(
    owner_client: APIClient, make_agent: Any, receiver: Receiver
) -> None:
    agent = make_agent()
    base = f"/v1/agents/{agent.pk}/webhooks"
    hook = owner_client.post(base, {"url": receiver.url}, format="json").json()
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, agent)
    as_reader = client_for(reader)
    assert as_reader.get(base).status_code == 200
    assert as_reader.get(f"{base}/{hook['id']}").status_code == 200
    assert as_reader.post(base, {"url": receiver.url}, format="json").status_code == 403
    assert (
        as_reader.patch(f"{base}/{hook['id']}", {"enabled": False}, format="json").status_code
        == 403
    )
    assert as_reader.delete(f"{base}/{hook['id']}").status_code == 403

    stranger = client_for(UserFactory(username="nobody"))
    assert stranger.get(base).status_code == 404
    assert stranger.post(base, {"url": receiver.url}, format="json").status_code == 404
    assert AgentWebhook.objects.count() == 1


@pytest.mark.parametrize("url", REFUSED)
def test_a_url_the_guard_refuses_is_a_400_at_its_path_and_nothing_is_written(
    owner_client: APIClient, make_agent: Any, settings: Any, url: str
) -> None:
    settings.MCP_ALLOWED_HOSTS = []
    agent = make_agent()
    created = owner_client.post(f"/v1/agents/{agent.pk}/webhooks", {"url": url}, format="json")
    assert created.status_code == 400
    (problem,) = created.json()["detail"]
    assert problem["loc"] == ["body", "url"]
    assert not AgentWebhook.objects.exists()

    invoked = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": ASK, "webhook": {"url": url}},
        format="json",
    )
    assert invoked.status_code == 400
    (problem,) = invoked.json()["detail"]
    assert problem["loc"] == ["body", "webhook", "url"]
    assert "address" in problem["msg"] or "not allowed" in problem["msg"]
    assert not Run.objects.exists()  # refused before the run opened


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"url": "ftp://127.0.0.1/hook"}, ["body", "url"]),
        ({"url": "http://127.0.0.1/hook", "events": ["run.exploded"]}, ["body", "events", 0]),
        ({"url": "http://127.0.0.1/hook", "events": []}, ["body", "events"]),
        ({"events": ["run.failed"]}, ["body", "url"]),
    ],
)
def test_bad_webhook_bodies_are_400_at_their_field(
    owner_client: APIClient, make_agent: Any, body: dict[str, Any], loc: list[Any]
) -> None:
    agent = make_agent()
    created = owner_client.post(f"/v1/agents/{agent.pk}/webhooks", body, format="json")
    assert created.status_code == 400
    assert [p["loc"] for p in created.json()["detail"]] == [loc]
    invoked = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": ASK, "webhook": body},
        format="json",
    )
    assert invoked.status_code == 400
    assert [p["loc"] for p in invoked.json()["detail"]] == [["body", "webhook", *loc[1:]]]
    assert not AgentWebhook.objects.exists()
    assert not Run.objects.exists()


def test_webhooks_off_refuse_a_body_webhook(
    owner_client: APIClient, make_agent: Any, settings: Any, receiver: Receiver
) -> None:
    settings.WEBHOOKS_ENABLED = False
    agent = make_agent()
    invoked = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": ASK, "webhook": {"url": receiver.url}},
        format="json",
    )
    assert invoked.status_code == 400
    assert invoked.json()["detail"][0]["loc"] == ["body", "webhook", "url"]


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("invoke-stream", {"messages": ASK}),
        ("respond", {"messages": ASK}),
        (
            "process",
            {
                "input": [{"role": "user", "content": [{"type": "text", "text": "2+3"}]}],
                "stream": False,
            },
        ),
    ],
)
def test_respond_process_and_streams_take_a_body_webhook(
    owner_client: APIClient, make_agent: Any, receiver: Receiver, route: str, body: dict[str, Any]
) -> None:
    agent = make_agent()
    response = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/{route}",
        {**body, "webhook": {"url": receiver.url, "events": ["run.completed"]}},
        format="json",
    )
    assert response.status_code == 200
    if response.streaming:
        read_stream(response)
    run = Run.objects.get()
    assert run.status == "completed"
    assert WebhookDelivery.objects.get().run_id == run.pk


def test_the_secret_is_shown_once_per_rotation_to_edit_holders(
    owner_client: APIClient, env: Environment
) -> None:
    first = owner_client.post("/v1/webhook-secret")
    assert first.status_code == 200, first.json()
    secret = first.json()["secret"]
    assert secret.startswith("whsec_")
    assert first.json()["environmentId"] == str(env.pk)
    assert environment_secret(environment_id=env.pk) == secret
    stored = Environment.objects.get(pk=env.pk).webhook_secret_encrypted
    assert secret not in stored
    assert secret.removeprefix("whsec_") not in stored

    second = owner_client.post("/v1/webhook-secret").json()["secret"]
    assert second != secret
    assert environment_secret(environment_id=env.pk) == second

    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)
    assert client_for(reader).post("/v1/webhook-secret").status_code == 403
