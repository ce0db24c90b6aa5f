"""The admin of access (agents.access.admin): an environment added through the service the
API uses (audited, its rules); the rate limits, an API client's on its own pages, a user's
inline on Django's user page; what is no positive count up to 10^9 is refused at its
field."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.access.api_clients import api_client_create
from agents.models import APIClient, AuditRecord, Environment, UserLimits
from tests.support.admin import browser_post_data

HOSTILE = ["0", "-1", "1000000001", "99999999999999999999999", "abc", "1.5", "1e3", " "]
FIELDS = ["requests_per_minute", "tokens_per_minute"]


@pytest.fixture
def site(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


@pytest.fixture
def api_client(env: Environment) -> APIClient:
    return api_client_create(name="ci", environment=env).client


def _change_client(site: Client, client: APIClient, **changes: Any) -> Any:
    url = reverse("admin:agents_apiclient_change", args=[client.pk])
    return site.post(url, browser_post_data(site.get(url), **changes))


def test_an_environment_added_in_the_admin_is_in_the_audit_log(site: Client) -> None:
    data = {"name": "staging", "description": "Before prod"}

    response = site.post(reverse("admin:agents_environment_add"), data)

    assert response.status_code == 302
    env = Environment.objects.get(name="staging")
    assert env.description == "Before prod"
    record = AuditRecord.objects.get(object_type="environment", object_id=str(env.pk))
    assert (record.action, record.surface) == ("create", "admin")


def test_an_environment_name_the_api_refuses_is_refused_at_its_field(site: Client) -> None:
    response = site.post(reverse("admin:agents_environment_add"), {"name": "has space"})

    assert response.status_code == 200
    assert "letters, digits" in str(response.context["adminform"].form.errors["name"])
    assert not Environment.objects.filter(name="has space").exists()


def test_an_api_client_is_minted_with_its_limits(site: Client, env: Environment):
    data = {"name": "ci", "environment": env.pk, "requests_per_minute": "60"}

    response = site.post(reverse("admin:agents_apiclient_add"), data)

    assert response.status_code == 302
    client = APIClient.objects.get(name="ci")
    assert (client.requests_per_minute, client.tokens_per_minute) == (60, None)


def test_an_api_clients_limits_are_changed_and_cleared(site: Client, api_client: APIClient):
    response = _change_client(site, api_client, requests_per_minute="5", tokens_per_minute="900")
    assert response.status_code == 302
    api_client.refresh_from_db()
    assert (api_client.requests_per_minute, api_client.tokens_per_minute) == (5, 900)

    assert _change_client(site, api_client, requests_per_minute="").status_code == 302
    api_client.refresh_from_db()
    assert (api_client.requests_per_minute, api_client.tokens_per_minute) == (None, 900)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", HOSTILE)
def test_an_api_client_refuses_a_limit_that_is_no_positive_count(
    site: Client, api_client: APIClient, env: Environment, field: str, value: str
):
    changed = _change_client(site, api_client, **{field: value})
    added = site.post(
        reverse("admin:agents_apiclient_add"), {"name": "ci2", "environment": env.pk, field: value}
    )

    for response in (changed, added):
        assert response.status_code == 200, "the form should have been re-rendered"
        assert list(response.context["adminform"].form.errors) == [field]
    api_client.refresh_from_db()
    assert getattr(api_client, field) is None
    assert not APIClient.objects.filter(name="ci2").exists()


def _change_user(site: Client, user: Any, **inline: str) -> Any:
    url = reverse("admin:auth_user_change", args=[user.pk])
    changes = {f"rate_limits-0-{name}": value for name, value in inline.items()}
    joined = user.date_joined  # a split widget: the browser posts its two halves
    changes |= {"date_joined_0": f"{joined:%Y-%m-%d}", "date_joined_1": f"{joined:%H:%M:%S}"}
    return site.post(url, browser_post_data(site.get(url), **changes))


def test_a_users_limits_are_set_on_the_user_page(site: Client, owner: Any):
    response = _change_user(site, owner, requests_per_minute="30", tokens_per_minute="")

    assert response.status_code == 302
    limits = UserLimits.objects.get(user=owner)
    assert (limits.requests_per_minute, limits.tokens_per_minute) == (30, None)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", ["0", "-5", "1000000001", "ten"])
def test_a_user_refuses_a_limit_that_is_no_positive_count(
    site: Client, owner: Any, field: str, value: str
):
    response = _change_user(site, owner, **{field: value})

    assert response.status_code == 200, "the page should have been re-rendered"
    (formset,) = [inline.formset for inline in response.context["inline_admin_formsets"]]
    assert list(formset.errors[0]) == [field]
    assert not UserLimits.objects.exists()
