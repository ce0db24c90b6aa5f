from __future__ import annotations

from urllib.parse import urlencode

from rest_framework.test import APIClient

from agents.models import APIClient as ApiClientRow
from agents.permissions import Action
from agents.services import api_client_create


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
