"""The authorization server's endpoints (agents.access.oauth.views) through Django's test
client: the metadata documents, registration and its limits, the consent page, the token
and revocation endpoints, each refusal the error its RFC names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, Application, RefreshToken

from agents.models import AuditRecord
from tests.support.oauth import (
    REDIRECT_URI,
    Pkce,
    answer,
    authorize_url,
    code_for,
    consent,
    exchange,
    refresh,
    register,
)

BASE = "http://testserver"
SCOPES = ["agents:read", "agents:invoke"]


@pytest.fixture
def site(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


@pytest.fixture
def public_client(db: Any) -> str:
    response = register(Client(), token_endpoint_auth_method="none")
    assert response.status_code == 201
    return str(response.json()["client_id"])


# ---------------------------------------------------------------- metadata


def test_the_authorization_server_metadata_names_its_endpoints_and_s256_only(
    client: Client,
) -> None:
    document = client.get("/.well-known/oauth-authorization-server").json()

    assert document["issuer"] == BASE
    assert document["authorization_endpoint"] == f"{BASE}/oauth/authorize"
    assert document["token_endpoint"] == f"{BASE}/oauth/token"
    assert document["registration_endpoint"] == f"{BASE}/oauth/register"
    assert document["revocation_endpoint"] == f"{BASE}/oauth/revoke"
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "none" in document["token_endpoint_auth_methods_supported"]
    assert document["scopes_supported"] == SCOPES


@pytest.mark.parametrize("path", ["/v1/mcp", "/v1/a2a"])
def test_each_protected_resource_names_itself_and_its_server(client: Client, path: str) -> None:
    response = client.get(f"/.well-known/oauth-protected-resource{path}")

    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == BASE + path
    assert document["authorization_servers"] == [BASE]
    assert document["scopes_supported"] == SCOPES
    assert document["bearer_methods_supported"] == ["header"]


# ---------------------------------------------------------------- registration


def test_a_public_client_registers_without_a_secret_and_is_audited(db: Any) -> None:
    response = register(Client(), token_endpoint_auth_method="none", scope="agents:read")

    assert response.status_code == 201
    body = response.json()
    assert "client_secret" not in body
    assert body["redirect_uris"] == [REDIRECT_URI]
    assert body["token_endpoint_auth_method"] == "none"
    assert isinstance(body["client_id_issued_at"], int)
    application = Application.objects.get(client_id=body["client_id"])
    assert application.client_type == Application.CLIENT_PUBLIC
    record = AuditRecord.objects.get(object_type="oauthclient", action="create")
    assert record.object_id == str(application.pk)
    assert record.changes["client_secret"] == {"from": "changed", "to": "changed"}


def test_a_confidential_client_gets_its_secret_once_and_never_in_the_log(db: Any) -> None:
    body = register(Client()).json()  # RFC 7591's default: client_secret_basic

    secret = body["client_secret"]
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert Application.objects.get(client_id=body["client_id"]).client_secret != secret
    assert secret not in json.dumps(list(AuditRecord.objects.values()), default=str)


HOSTILE = {
    "http on a public host": ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
    "javascript": ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
    "data": ({"redirect_uris": ["data:text/html,hi"]}, "invalid_redirect_uri"),
    "a fragment": ({"redirect_uris": ["https://a.example/cb#x"]}, "invalid_redirect_uri"),
    "credentials": ({"redirect_uris": ["https://u:p@a.example/cb"]}, "invalid_redirect_uri"),
    "no redirect": ({"redirect_uris": []}, "invalid_redirect_uri"),
    "too many": (
        {"redirect_uris": [f"http://127.0.0.1:{p}/cb" for p in range(6)]},
        "invalid_redirect_uri",
    ),
    "huge metadata": (
        {"client_uri": "https://a.example/" + "x" * 17000},
        "invalid_client_metadata",
    ),
    "a long name": ({"client_name": "n" * 101}, "invalid_client_metadata"),
    "client credentials": ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    "implicit": ({"grant_types": ["authorization_code", "implicit"]}, "invalid_client_metadata"),
    "password": ({"grant_types": ["password"]}, "invalid_client_metadata"),
    "a token response": ({"response_types": ["token"]}, "invalid_client_metadata"),
    "an unknown method": (
        {"token_endpoint_auth_method": "private_key_jwt"},
        "invalid_client_metadata",
    ),
    "an unknown scope": ({"scope": "agents:read admin"}, "invalid_client_metadata"),
}


@pytest.mark.parametrize(("metadata", "error"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_registrations_are_refused_with_the_rfc_7591_error(
    db: Any, metadata: dict[str, Any], error: str
) -> None:
    response = register(Client(), **metadata)

    assert response.status_code == 400
    assert response.json()["error"] == error
    assert response.json()["error_description"]
    assert not Application.objects.exists()
    assert not AuditRecord.objects.exists()


@pytest.mark.parametrize("body", [b"not json", b"[1]", b"{" * 100_000])
def test_a_body_that_is_no_json_object_is_invalid_client_metadata(db: Any, body: bytes) -> None:
    response = Client().post("/oauth/register", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("uri", ["http://[::1]:9/cb", "http://localhost/cb", "https://a.example/"])
def test_loopback_http_and_any_https_redirect_is_accepted(db: Any, uri: str) -> None:
    assert register(Client(), redirect_uris=[uri]).status_code == 201


def test_registrations_are_throttled_per_address(db: Any, rates: Any) -> None:
    rates(oauth_register="2/hour")
    client = Client()
    assert [register(client).status_code for _ in range(3)] == [201, 201, 429]
    assert Application.objects.count() == 2


def test_token_requests_are_throttled_per_address(
    site: Client, public_client: str, rates: Any
) -> None:
    rates(token="2/min")
    pkce = Pkce.make()
    code = code_for(site, public_client, pkce)
    statuses = [exchange(site, public_client, code, pkce).status_code for _ in range(3)]

    assert statuses == [200, 400, 429]  # the code once, then reused, then throttled
    refused = exchange(site, public_client, code, pkce)
    assert refused["Retry-After"].isdigit()
    assert refused.json()["error"] == "invalid_request"


# ---------------------------------------------------------------- authorization


def test_the_authorize_endpoint_sends_a_stranger_to_the_admin_login_and_back(
    client: Client, public_client: str
) -> None:
    url = authorize_url(public_client, Pkce.make())

    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")
    assert response["Location"].startswith("/admin/login/?next=/oauth/authorize%3F")


def test_the_consent_page_names_the_client_its_host_the_scopes_and_the_resource(
    site: Client, public_client: str
) -> None:
    page = site.get(authorize_url(public_client, Pkce.make()))

    text = page.content.decode()
    assert "Desk asks to act as you" in text
    assert "127.0.0.1:8765" in text
    assert "agents:invoke" in text
    assert "Run agents as you" in text
    assert f"{BASE}/v1" in text  # no resource asked: the whole API, as the token will be


def test_a_client_that_holds_a_token_still_gets_the_consent_page(
    site: Client, public_client: str
) -> None:
    # A live token for the MCP server, then `approval_prompt=auto` for the whole API: DOT
    # would redirect with a code at once, the user never asked about the wider resource.
    pkce = Pkce.make()
    code = code_for(site, public_client, pkce, resource=f"{BASE}/v1/mcp")
    assert exchange(site, public_client, code, pkce).status_code == 200

    page = site.get(authorize_url(public_client, Pkce.make(), approval_prompt="auto"))

    assert page.status_code == 200  # the page, not a redirect with a code
    assert page.context["resources"] == [f"{BASE}/v1"]


def test_deny_sends_the_client_access_denied_with_its_state(
    site: Client, public_client: str
) -> None:
    query = answer(consent(site, authorize_url(public_client, Pkce.make()), allow=False))

    assert query["error"] == "access_denied"
    assert query["state"] == "st-1"
    assert "code" not in query


@pytest.mark.parametrize(
    "params",
    [{"code_challenge_method": "plain"}, {"code_challenge_method": ""}],
    ids=["plain", "no method"],
)
def test_pkce_other_than_s256_is_invalid_request(
    site: Client, public_client: str, params: dict[str, str]
) -> None:
    pkce = Pkce.make()
    url = authorize_url(public_client, None, code_challenge=pkce.verifier, **params)

    query = answer(site.get(url))

    assert query["error"] == "invalid_request"
    assert query["state"] == "st-1"


def test_a_request_without_a_code_challenge_is_invalid_request(
    site: Client, public_client: str
) -> None:
    query = answer(site.get(authorize_url(public_client, None)))

    assert query["error"] == "invalid_request"
    assert "code challenge" in query["error_description"].lower()


@pytest.mark.parametrize(
    "resource",
    ["https://elsewhere.example/v1/mcp", f"{BASE}/admin", f"{BASE}/v1/mcp/x", f"{BASE}/v1/a2a/a/b"],
)
def test_a_resource_not_ours_is_invalid_target(
    site: Client, public_client: str, resource: str
) -> None:
    query = answer(site.get(authorize_url(public_client, Pkce.make(), resource=resource)))

    assert query["error"] == "invalid_target"


def test_a_redirect_uri_not_registered_is_never_redirected_to(
    site: Client, public_client: str
) -> None:
    url = authorize_url(public_client, Pkce.make(), redirect_uri="http://127.0.0.1:1/other")

    response = site.get(url)

    assert response.status_code == 400
    assert "cannot be authorized" in response.content.decode()


# ---------------------------------------------------------------- tokens


def test_a_code_is_exchanged_once_bound_to_its_resource(site: Client, public_client: str) -> None:
    pkce = Pkce.make()
    code = code_for(site, public_client, pkce, resource=f"{BASE}/v1/mcp")

    first = exchange(Client(), public_client, code, pkce)
    again = exchange(Client(), public_client, code, pkce)

    assert first.status_code == 200, first.content
    body = first.json()
    assert body["token_type"] == "Bearer"
    assert set(body["scope"].split()) == set(SCOPES)
    assert body["refresh_token"]
    token = AccessToken.objects.get()
    assert token.resource == [f"{BASE}/v1/mcp"]
    assert token.token == ""  # stored hashed only (RFC 9700)
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"


def test_a_code_without_its_verifier_is_invalid_grant(site: Client, public_client: str) -> None:
    code = code_for(site, public_client, Pkce.make())

    response = exchange(Client(), public_client, code, Pkce.make())

    assert response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()


def test_a_code_with_another_redirect_uri_is_refused(site: Client, public_client: str) -> None:
    pkce = Pkce.make()
    code = code_for(site, public_client, pkce)

    response = exchange(
        Client(), public_client, code, pkce, redirect_uri="http://127.0.0.1:8765/other"
    )

    assert response.status_code in (400, 401)
    assert response.json()["error"] in ("invalid_grant", "invalid_request")
    assert not AccessToken.objects.exists()


def test_a_token_request_for_a_resource_not_ours_is_invalid_target(
    site: Client, public_client: str
) -> None:
    pkce = Pkce.make()
    code = code_for(site, public_client, pkce)

    response = exchange(Client(), public_client, code, pkce, resource="https://x.example/v1")

    assert response.json()["error"] == "invalid_target"
    assert not AccessToken.objects.exists()


def test_no_resource_binds_the_token_to_the_whole_api(site: Client, public_client: str) -> None:
    pkce = Pkce.make()
    exchange(Client(), public_client, code_for(site, public_client, pkce), pkce)

    assert AccessToken.objects.get().resource == [f"{BASE}/v1"]


def tokens(site: Client, client_id: str, **params: str) -> dict[str, Any]:
    pkce = Pkce.make()
    response = exchange(Client(), client_id, code_for(site, client_id, pkce, **params), pkce)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def test_a_refresh_rotates_and_a_rotated_token_replayed_kills_the_family(
    site: Client, public_client: str
) -> None:
    first = tokens(site, public_client)

    rotated = refresh(Client(), public_client, first["refresh_token"])
    replayed = refresh(Client(), public_client, first["refresh_token"])
    after_replay = refresh(Client(), public_client, rotated.json()["refresh_token"])

    assert rotated.status_code == 200
    assert rotated.json()["refresh_token"] != first["refresh_token"]
    assert rotated.json()["access_token"] != first["access_token"]
    assert replayed.json()["error"] == "invalid_grant"
    # Reuse of a rotated token means it leaked: its successors die with it.
    assert after_replay.json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_a_refresh_keeps_the_resource_and_cannot_widen_it(site: Client, public_client: str) -> None:
    first = tokens(site, public_client, resource=f"{BASE}/v1/mcp")

    wider = refresh(Client(), public_client, first["refresh_token"], resource=f"{BASE}/v1")
    same = refresh(Client(), public_client, first["refresh_token"])

    assert wider.json()["error"] == "invalid_target"
    assert same.status_code == 200
    access = AccessToken.objects.exclude(source_refresh_token=None).get()
    assert access.resource == [f"{BASE}/v1/mcp"]


def test_a_revoked_access_token_is_refused_by_the_api(site: Client, public_client: str) -> None:
    issued = tokens(site, public_client)
    api = Client(headers={"Authorization": f"Bearer {issued['access_token']}"})
    assert api.get("/v1/agents").status_code == 200

    revoked = Client().post(
        "/oauth/revoke", {"token": issued["access_token"], "client_id": public_client}
    )

    assert revoked.status_code == 200
    assert api.get("/v1/agents").status_code == 401
    # The refresh token went with it (RFC 7009 2.1).
    assert refresh(Client(), public_client, issued["refresh_token"]).status_code == 400


def test_a_confidential_client_must_authenticate_at_the_token_endpoint(
    site: Client, db: Any
) -> None:
    registered = register(Client()).json()
    pkce = Pkce.make()
    code = code_for(site, registered["client_id"], pkce)

    anonymous = exchange(Client(), registered["client_id"], code, pkce)
    with_secret = exchange(
        Client(), registered["client_id"], code, pkce, client_secret=registered["client_secret"]
    )

    assert anonymous.json()["error"] == "invalid_client"
    assert with_secret.status_code == 200
