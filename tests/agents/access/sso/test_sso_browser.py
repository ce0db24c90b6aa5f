"""Single sign-on in Chromium against a real OpenID provider on loopback (panva's certified
oidc-provider, tests/support/oidc_provider.py): the admin's login page, its "Sign in with"
button, the provider's login and consent, back in the admin as a new staff user in the
groups its claim names; a second login after the provider changed them sets them again."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group

from agentbuilder.users import User
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.support.oidc_provider import OidcProvider, oidc_provider

ALICE = {"preferred_username": "alice", "email": "alice@example.com"}


@pytest.fixture(scope="module")
def provider(
    browser_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OidcProvider]:
    callback = f"{browser_server}/admin/oidc/callback/"
    with oidc_provider(tmp_path_factory.mktemp("oidc"), [callback]) as served:
        yield served


def sign_in(page: Page, login: str) -> None:
    """From the admin's login page through the provider's forms, back in the admin."""
    page.open("/admin/login/?next=/admin/")
    button = page.wait_for("#sso-login a", text="Sign in with Acme ID")
    page.shot("sso-login-page")
    button.click()
    page.wait_for("input[name=login]").send_keys(login)
    page.find("input[name=password]").send_keys("any")
    page.find("button[type=submit]").click()
    page.wait_for("button[type=submit]", text="Continue").click()  # the consent
    page.wait_for("#user-tools", text=login.upper())


@BROWSER
def test_sso_makes_a_staff_user_in_the_mapped_groups_and_updates_them(
    page: Page, provider: OidcProvider, settings: Any
) -> None:
    for name, value in provider.settings.items():
        setattr(settings, name, value)
    settings.OIDC_PROVIDER_NAME = "Acme ID"
    settings.OIDC_SCOPES = "openid email profile groups"
    editors = Group.objects.create(name="editors")
    viewers = Group.objects.create(name="viewers")
    provider.accounts({"alice": {**ALICE, "groups": ["editors"]}})

    sign_in(page, "alice")

    assert page.path == "/admin/"
    user = User.objects.get(sso_identity__subject="alice")
    assert (user.username, user.is_staff, user.is_superuser) == ("alice", True, False)
    assert list(user.groups.all()) == [editors]
    page.shot("sso-signed-in")

    page.reset()
    provider.accounts({"alice": {**ALICE, "groups": ["viewers"]}})
    sign_in(page, "alice")

    assert list(user.groups.all()) == [viewers]
    assert User.objects.count() == 1
