from __future__ import annotations

import time
from urllib.parse import urlencode

import jwt
from django.conf import settings
from django.contrib.auth.hashers import make_password
from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action, grant
from agents.access.tokens import token_decode, token_encode, token_holder
from agents.models import Agent, Environment
from agents.models import APIClient as ApiClientRow


def _token(body: dict[str, str], form: bool = False) -> tuple[int, dict]:
    if form:  # what OAuth client libraries send
        response = APIClient().post(
            "/v1/auth/token", urlencode(body), content_type="application/x-www-form-urlencoded"
        )
    else:
        response = APIClient().post("/v1/auth/token", body, format="json")
    return response.status_code, response.json()


def test_client_credentials_token_is_scoped_to_the_clients_environment(other_env, make_agent):
    make_agent("calc")  # in the default environment
    twin = make_agent("calc", environment=other_env)
    issued = api_client_create(name="ci", environment=other_env, actions=[Action.READ])
    status, body = _token(
        {
            "grant_type": "client_credentials",
            "client_id": issued.client.client_id,
            "client_secret": issued.secret,
        },
        form=True,
    )
    assert status == 200, body
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    listed = client.get("/v1/agents").json()["agents"]
    assert [a["id"] for a in listed] == [str(twin.pk)]


def test_wrong_client_secret_is_401(other_env):
    issued = api_client_create(name="ci", environment=other_env)
    status, body = _token(
        {
            "grant_type": "client_credentials",
            "client_id": issued.client.client_id,
            "client_secret": issued.secret + "x",
        }
    )
    assert status == 401
    assert body == {"detail": "Invalid client credentials."}


def test_disabling_a_client_revokes_the_tokens_it_already_has(other_env):
    issued = api_client_create(name="ci", environment=other_env, actions=[Action.READ])
    _, body = _token(
        {
            "grant_type": "client_credentials",
            "client_id": issued.client.client_id,
            "client_secret": issued.secret,
        }
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert client.get("/v1/agents").status_code == 200
    ApiClientRow.objects.filter(pk=issued.client.pk).update(enabled=False)
    assert client.get("/v1/agents").status_code == 401


def test_password_grant_gives_a_token_that_works(owner):
    status, body = _token({"grant_type": "password", "username": "owner", "password": "pw"})
    assert status == 200, body
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert client.get("/v1/environments").json()["environments"][0]["name"] == "default"


# ---------------------------------------------------------------- revocation


def _bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_password_change_revokes_the_tokens_issued_before_it(owner):
    _, body = _token({"grant_type": "password", "username": "owner", "password": "pw"})
    before = _bearer(body["access_token"])
    assert before.get("/v1/environments").status_code == 200

    owner.set_password("a-new-password")
    owner.save()

    response = before.get("/v1/environments")
    assert response.status_code == 401
    assert response.json() == {"detail": "Token revoked: the credentials changed."}
    status, body = _token(
        {"grant_type": "password", "username": "owner", "password": "a-new-password"}
    )
    assert status == 200, body
    assert _bearer(body["access_token"]).get("/v1/environments").status_code == 200


def test_a_new_client_secret_revokes_the_clients_tokens(other_env):
    issued = api_client_create(name="ci", environment=other_env, actions=[Action.READ])
    _, body = _token(
        {
            "grant_type": "client_credentials",
            "client_id": issued.client.client_id,
            "client_secret": issued.secret,
        }
    )
    client = _bearer(body["access_token"])
    assert client.get("/v1/agents").status_code == 200
    ApiClientRow.objects.filter(pk=issued.client.pk).update(secret_hash=make_password("rotated"))
    assert client.get("/v1/agents").status_code == 401


def test_a_token_without_the_credentials_stamp_is_refused(owner):
    # As every token issued before the stamp existed: signed, unexpired, and now invalid.
    now = int(time.time())
    payload = {"iss": "agentbuilder", "sub": str(owner.pk), "iat": now, "exp": now + 60}
    token = jwt.encode(payload, settings.JWT_SIGNING_KEY, algorithm="HS256")
    assert _bearer(token).get("/v1/environments").status_code == 401


# The token's environment, read with its holder (agents.access.tokens.token_holder)


def test_the_tokens_holder_carries_its_environment_default_or_claimed(owner, other_env):
    default_token, _ = token_encode(user_id=owner.pk, environment_id=None)
    claimed_token, _ = token_encode(user_id=owner.pk, environment_id=str(other_env.pk))

    assert token_holder(token_decode(default_token)).token_environment == Environment.objects.get(
        name="default"
    )
    assert token_holder(token_decode(claimed_token)).token_environment == other_env

    other_env.delete()
    assert token_holder(token_decode(claimed_token)).token_environment is None


def test_a_token_whose_environment_is_gone_is_404_and_the_header_picks_without_a_claim(
    owner, other_env, make_agent
):
    for action in Action:
        grant(owner, action, other_env)
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_ENVIRONMENT="other")
    make_agent("InOther", "tool", environment=other_env)
    # No claim: the header, not the default read with the token, chooses.
    names = [a["name"] for a in client.get("/v1/agents").json()["agents"]]
    assert names == ["InOther"]

    claimed, _ = token_encode(user_id=owner.pk, environment_id=str(other_env.pk))
    gone = APIClient()
    gone.credentials(HTTP_AUTHORIZATION=f"Bearer {claimed}")
    Agent.objects.filter(environment=other_env).delete()
    other_env.delete()
    response = gone.get("/v1/agents")
    assert response.status_code == 404
    assert "no longer exists" in response.json()["detail"]
