"""Password login while single sign-on is on: OIDC_LOCAL_LOGIN decides who may, in the
authentication backend, so the admin's form and the API's password grant refuse alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import UserFactory

PASSWORD = "pw"  # tests.factories.UserFactory's


@pytest.fixture
def sso_on(settings: Any, db: Any) -> Any:
    # No provider is reached: a password login never asks it.
    settings.OIDC_ISSUER = "http://127.0.0.1:9"
    settings.OIDC_CLIENT_ID = "agentbuilder"
    settings.OIDC_CLIENT_SECRET = "generated-for-" + __name__
    return settings


def admin_login(username: str) -> bool:
    response = Client().post(
        "/admin/login/?next=/admin/", {"username": username, "password": PASSWORD}
    )
    return response.status_code == 302


def token_grant(username: str) -> int:
    body = {"grant_type": "password", "username": username, "password": PASSWORD}
    return APIClient().post("/v1/auth/token", body, format="json").status_code


@pytest.mark.parametrize(
    ("mode", "staff_in", "superuser_in"),
    [("superuser", False, True), ("off", False, False), ("all", True, True)],
)
def test_local_login_follows_the_setting_in_the_form_and_the_token_grant(
    sso_on: Any, mode: str, staff_in: bool, superuser_in: bool
) -> None:
    sso_on.OIDC_LOCAL_LOGIN = mode
    UserFactory(username="staff", is_staff=True)
    UserFactory(username="root", is_staff=True, is_superuser=True)

    assert admin_login("staff") is staff_in
    assert admin_login("root") is superuser_in
    assert token_grant("staff") == (200 if staff_in else 401)
    assert token_grant("root") == (200 if superuser_in else 401)


def test_without_single_sign_on_the_setting_changes_nothing(settings: Any, db: Any) -> None:
    settings.OIDC_LOCAL_LOGIN = "off"
    UserFactory(username="staff", is_staff=True)

    assert admin_login("staff")
    assert token_grant("staff") == 200
