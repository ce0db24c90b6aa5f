"""Single sign-on's login page and its two views, against a real OpenID provider on loopback
(tests/support/oidc_provider.py) whose login form is driven over HTTP: users made at the first
login and found again at the next, groups from the claim, every check of the callback."""

from __future__ import annotations

import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from agentbuilder.users import User
from agents.access.permissions import Action, grant
from agents.models import AuditRecord, Environment
from tests.support.oidc_provider import OidcProvider, oidc_provider, provider_login

CALLBACK = "http://testserver/admin/oidc/callback/"
LOGIN = "/admin/login/?next=/admin/"
ALICE = {"preferred_username": "alice", "email": "alice@example.com", "given_name": "Alice"}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    with oidc_provider(tmp_path_factory.mktemp("oidc"), [CALLBACK]) as served:
        yield served


@pytest.fixture
def sso(settings: Any, provider: OidcProvider) -> OidcProvider:
    for name, value in provider.settings.items():
        setattr(settings, name, value)
    settings.OIDC_PROVIDER_NAME = "Acme ID"
    settings.OIDC_SCOPES = "openid email profile groups"
    return provider


def sign_in(client: Client, login: str) -> Any:
    """Through the button, the provider's forms and back: the callback's response."""
    start = client.get("/admin/oidc/login/?next=/admin/")
    assert start.status_code == 302, start.content
    return client.get(provider_login(start["Location"], login, CALLBACK))


def test_without_the_three_settings_the_login_page_is_unchanged(db: Any, settings: Any) -> None:
    settings.OIDC_ISSUER = "http://127.0.0.1:9"
    settings.OIDC_CLIENT_ID = "agentbuilder"  # no secret: still off

    page = Client().get(LOGIN).content.decode()

    assert "Sign in with" not in page
    assert 'id="login-form"' in page
    assert Client().get("/admin/oidc/login/").status_code == 404
    assert Client().get("/admin/oidc/callback/?code=x&state=y").status_code == 404


def test_the_login_page_offers_the_provider_and_keeps_the_password_form(sso: OidcProvider) -> None:
    page = Client().get(LOGIN).content.decode()

    assert "Sign in with Acme ID" in page
    assert 'href="/admin/oidc/login/?next=/admin/"' in page
    assert 'id="login-form"' in page


def test_with_local_login_off_the_page_has_no_password_form(
    sso: OidcProvider, settings: Any
) -> None:
    settings.OIDC_LOCAL_LOGIN = "off"

    page = Client().get(LOGIN).content.decode()

    assert "Sign in with Acme ID" in page
    assert 'id="login-form"' not in page


def test_first_login_makes_a_staff_user_in_the_mapped_groups(sso: OidcProvider, db: Any) -> None:
    editors = Group.objects.create(name="editors")
    env = Environment.objects.create(name="team")
    grant(editors, Action.READ, env)
    sso.accounts({"a1": {**ALICE, "groups": ["editors", "not-in-django"]}})
    client = Client()

    response = sign_in(client, "a1")

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    user = User.objects.get(sso_identity__subject="a1")
    assert (user.username, user.email, user.first_name) == ("alice", "alice@example.com", "Alice")
    assert (user.is_staff, user.is_superuser, user.has_usable_password()) == (True, False, False)
    assert [g.name for g in user.groups.all()] == ["editors"]  # no group made from a claim
    assert user.has_perm(str(Action.READ), env)  # the group's object permission applies
    assert client.get("/admin/").status_code == 200
    records = AuditRecord.objects.filter(object_type="user", object_id=str(user.pk))
    assert [r.action for r in records.order_by("id")] == ["create", "update"]
    assert records.order_by("id")[1].changes == {"groups": {"from": [], "to": ["editors"]}}


def test_the_next_login_finds_the_user_and_sets_its_groups_again(
    sso: OidcProvider, db: Any
) -> None:
    Group.objects.create(name="editors")
    Group.objects.create(name="viewers")
    sso.accounts({"a2": {**ALICE, "groups": ["editors"]}})
    sign_in(Client(), "a2")
    sso.accounts({"a2": {**ALICE, "email": "alice@new.example.com", "groups": ["viewers"]}})

    response = sign_in(Client(), "a2")

    assert response.status_code == 302
    user = User.objects.get()
    assert user.email == "alice@new.example.com"
    assert [g.name for g in user.groups.all()] == ["viewers"]
    last = AuditRecord.objects.filter(object_type="user").order_by("-id").first()
    assert last is not None
    assert last.changes == {"groups": {"from": ["editors"], "to": ["viewers"]}}


def test_a_local_user_of_the_same_name_is_not_taken_over(sso: OidcProvider, db: Any) -> None:
    local = User.objects.create_superuser("alice", "alice@example.com", secrets.token_urlsafe())
    sso.accounts({"a3": ALICE})

    sign_in(Client(), "a3")

    made = User.objects.get(sso_identity__subject="a3")
    assert made.pk != local.pk
    assert (made.username, made.is_superuser) == ("alice-2", False)


@pytest.mark.parametrize(("alg", "status"), [("ES256", 302), ("HS256", 400)])
def test_id_tokens_are_taken_signed_es256_and_refused_signed_with_the_client_secret(
    settings: Any, db: Any, tmp_path: Path, alg: str, status: int
) -> None:
    with oidc_provider(tmp_path, [CALLBACK], alg=alg) as other:
        for name, value in other.settings.items():
            setattr(settings, name, value)
        other.accounts({"a6": ALICE})

        response = sign_in(Client(), "a6")

    assert response.status_code == status
    assert User.objects.filter(sso_identity__subject="a6").exists() is (status == 302)
    if status == 400:
        assert "ID token signed with &#x27;HS256&#x27;" in response.content.decode()


def test_a_callback_whose_state_this_session_did_not_start_is_refused(
    sso: OidcProvider, db: Any
) -> None:
    sso.accounts({"a4": ALICE})
    client = Client()
    start = client.get("/admin/oidc/login/")
    callback = provider_login(start["Location"], "a4", CALLBACK)

    forged = client.get(callback.replace("state=", "state=x"))
    elsewhere = Client().get(callback)  # another browser: nothing started there

    assert forged.status_code == 400
    assert "state not found" in forged.content.decode()
    assert elsewhere.status_code == 403
    assert not User.objects.exists()


def test_an_id_token_for_another_nonce_is_refused(sso: OidcProvider, db: Any) -> None:
    sso.accounts({"a5": ALICE})
    client = Client()
    start = client.get("/admin/oidc/login/")
    session = client.session
    for state in session["oidc_states"].values():
        state["nonce"] = "not-the-one-sent"
    session.save()

    response = client.get(provider_login(start["Location"], "a5", CALLBACK))

    assert response.status_code == 400
    assert "Nonce verification failed" in response.content.decode()
    assert not User.objects.exists()


def test_the_provider_sends_the_code_challenge_the_session_keeps_the_verifier(
    sso: OidcProvider, db: Any
) -> None:
    client = Client()

    start = client.get("/admin/oidc/login/")

    assert "code_challenge_method=S256" in start["Location"]
    assert "nonce=" in start["Location"]
    (state,) = client.session["oidc_states"].values()
    assert len(state["code_verifier"]) >= 43


def test_a_refusal_at_the_provider_is_a_page_not_a_login(sso: OidcProvider, db: Any) -> None:
    response = Client().get("/admin/oidc/callback/?error=access_denied&state=s")

    assert response.status_code == 403
    assert "access_denied" in response.content.decode()


def test_an_unreachable_issuer_is_a_clear_error_page(settings: Any, db: Any) -> None:
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.OIDC_ISSUER = f"http://127.0.0.1:{port}"
    settings.OIDC_CLIENT_ID = "agentbuilder"
    settings.OIDC_CLIENT_SECRET = "generated-" + Path(__file__).stem

    response = Client().get("/admin/oidc/login/")

    assert response.status_code == 502
    page = response.content.decode()
    assert "The identity provider cannot be reached" in page
    assert f"127.0.0.1:{port}/.well-known/openid-configuration" in page
