from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import jwt
import pytest
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.cache import cache
from rest_framework.test import APIClient

from agents.models import Agent, Environment
from agents.models import APIClient as ApiClientRow
from agents.permissions import Action, grant
from agents.services.api_clients import api_client_create
from agents.tokens import token_decode, token_encode, token_holder


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


# ---------------------------------------------------------------- throttling


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    cache.clear()  # throttle history lives in the cache and would leak between tests


def _guess(password: str, username: str = "owner", **meta: str) -> Any:
    body = {"grant_type": "password", "username": username, "password": password}
    return APIClient().post("/v1/auth/token", body, format="json", **meta)


def _assert_throttled(response: Any, most: int) -> None:
    assert response.status_code == 429, response.json()
    assert response.json()["detail"].startswith("Request was throttled.")
    assert 1 <= int(response["Retry-After"]) <= most + 1
    assert "access_token" not in response.json()


def test_a_forged_x_forwarded_for_buys_no_more_guesses(owner, rates):
    rates(token="5/min", token_account="1000/hour")
    answers = [
        _guess(f"guess-{n}", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 198.51.100.{n}").status_code
        for n in range(8)
    ]
    assert answers == [401] * 5 + [429] * 3
    _assert_throttled(_guess("pw", HTTP_X_FORWARDED_FOR="192.0.2.77"), 60)


def test_guesses_at_one_account_from_many_addresses_are_throttled(owner, stranger, rates):
    rates(token="1000/min", token_account="3/hour")
    answers = [_guess(f"guess-{n}", REMOTE_ADDR=f"10.9.0.{n}").status_code for n in range(5)]
    assert answers == [401, 401, 401, 429, 429]
    # Not even the right password, from a fresh address, nor the name in other case.
    _assert_throttled(_guess("pw", REMOTE_ADDR="10.9.1.1"), 3600)
    _assert_throttled(_guess("pw", username="OWNER", REMOTE_ADDR="10.9.1.2"), 3600)
    # Another account, same addresses: untouched.
    stranger.set_password("pw2")
    stranger.save()
    assert _guess("pw2", username="stranger", REMOTE_ADDR="10.9.0.1").status_code == 200


def test_right_credentials_do_not_count_against_the_account(owner, rates):
    rates(token="1000/min", token_account="2/hour")
    assert [_guess("pw").status_code for _ in range(4)] == [200] * 4
    assert [_guess("nope").status_code for _ in range(3)] == [401, 401, 429]


def test_client_secret_guesses_are_throttled_per_client_id(other_env, rates):
    rates(token="1000/min", token_account="2/hour")
    issued = api_client_create(name="ci", environment=other_env)
    body = {"grant_type": "client_credentials", "client_id": issued.client.client_id}
    client = APIClient()
    answers = [
        client.post(
            "/v1/auth/token", {**body, "client_secret": f"s{n}"}, "json", REMOTE_ADDR=f"10.8.{n}.1"
        ).status_code
        for n in range(3)
    ]
    assert answers == [401, 401, 429]
    right = client.post("/v1/auth/token", {**body, "client_secret": issued.secret}, "json")
    _assert_throttled(right, 3600)


def test_forwarded_for_is_believed_from_a_trusted_proxy_only(owner, rates, settings):
    rates(token="2/min", token_account="1000/hour")
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    via_proxy = {"REMOTE_ADDR": "10.0.0.5"}
    for client in ("198.51.100.1", "198.51.100.2"):  # two callers behind one proxy
        forwarded = f"203.0.113.9, {client}, 10.0.0.4"  # the client's claim, then proxies
        assert _guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy).status_code == 401
        assert _guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy).status_code == 401
        _assert_throttled(_guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy), 60)
    # Not from a proxy: the header is the caller's own invention, and ignored.
    direct = {"REMOTE_ADDR": "192.0.2.1"}
    assert _guess("x", HTTP_X_FORWARDED_FOR="198.51.100.3", **direct).status_code == 401
    assert _guess("x", HTTP_X_FORWARDED_FOR="198.51.100.4", **direct).status_code == 401
    _assert_throttled(_guess("x", HTTP_X_FORWARDED_FOR="198.51.100.5", **direct), 60)


# The token's environment, read with its holder (agents.tokens.token_holder)


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
