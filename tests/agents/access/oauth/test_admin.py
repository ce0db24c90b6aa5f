"""Registered OAuth clients in the admin (agents.access.oauth.admin): listed with where they
send their users, and revoked by deleting them, one or many: their tokens die at once and
the audit log says who did it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from oauth2_provider.models import AccessToken, Application

from agents.models import AuditRecord
from tests.support.oauth import issue

BASE = "http://testserver"


@pytest.fixture
def site(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


def test_registered_clients_are_listed_with_their_redirect_hosts(site: Client, owner: Any) -> None:
    issue(owner, resources=[f"{BASE}/v1"])
    application = Application.objects.get()

    page = site.get(reverse("admin:oauth2_provider_application_changelist"))

    assert page.status_code == 200
    text = page.content.decode()
    assert application.client_id in text
    assert "127.0.0.1:8765" in text


@pytest.mark.parametrize("how", ["delete page", "list action"])
def test_revoking_a_client_kills_its_tokens_and_is_audited(
    site: Client, owner: Any, admin_user: Any, how: str
) -> None:
    token = issue(owner, resources=[f"{BASE}/v1"])
    application = Application.objects.get()
    api = Client(headers={"Authorization": f"Bearer {token}"})
    assert api.get("/v1/agents").status_code == 200

    if how == "delete page":
        url = reverse("admin:oauth2_provider_application_delete", args=[application.pk])
        response = site.post(url, {"post": "yes"})
    else:
        url = reverse("admin:oauth2_provider_application_changelist")
        data = {"action": "delete_selected", "_selected_action": [application.pk], "post": "yes"}
        response = site.post(url, data)

    assert response.status_code == 302
    assert not Application.objects.exists()
    assert not AccessToken.objects.exists()
    assert api.get("/v1/agents").status_code == 401
    record = AuditRecord.objects.get(action="delete")
    assert (record.object_type, record.object_id) == ("oauthclient", str(application.pk))
    assert record.actor == admin_user
    assert record.surface == "admin"
