"""An OAuth client's side of the authorization server (agents.access.oauth), for the tests
that drive it by hand: PKCE pairs, a registered client, the consent page's answer."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

REDIRECT_URI = "http://127.0.0.1:8765/callback"


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def make(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).decode().rstrip("="))


def register(client: Client, **metadata: Any) -> Any:
    body = {"redirect_uris": [REDIRECT_URI], "client_name": "Desk", **metadata}
    return client.post("/oauth/register", body, content_type="application/json")


def authorize_url(client_id: str, pkce: Pkce | None, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "st-1",
        "scope": "agents:read agents:invoke",
    }
    if pkce is not None:
        query |= {"code_challenge": pkce.challenge, "code_challenge_method": "S256"}
    return "/oauth/authorize?" + urlencode(query | params)


def answer(response: Any) -> dict[str, str]:
    """The query of a redirect back to the client, one value a name."""
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith(REDIRECT_URI), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def consent(client: Client, url: str, *, allow: bool = True) -> Any:
    """The consent page's form at `url` (its client logged in), sent with Allow or Deny."""
    page = client.get(url)
    assert page.status_code == 200, page.content[:500]
    form = page.context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None}
    if allow:
        data["allow"] = "Allow"
    return client.post(url, data)


def code_for(client: Client, client_id: str, pkce: Pkce, **params: str) -> str:
    return answer(consent(client, authorize_url(client_id, pkce, **params)))["code"]


def exchange(client: Client, client_id: str, code: str, pkce: Pkce, **extra: str) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": pkce.verifier,
        **extra,
    }
    return client.post("/oauth/token", data)


def refresh(client: Client, client_id: str, refresh_token: str, **extra: str) -> Any:
    data = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client_id,
        **extra,
    }
    return client.post("/oauth/token", data)


def issue(
    user: Any,
    *,
    resources: list[str],
    scope: str = "agents:read agents:invoke",
    seconds: int = 3600,
) -> str:
    """An access token as the token endpoint would store it, without the flow."""
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import AccessToken, Application, set_token_value

    application = Application.objects.create(
        name="Desk",
        redirect_uris=REDIRECT_URI,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
    )
    raw = secrets.token_urlsafe(30)
    token = AccessToken(
        user=user,
        application=application,
        expires=timezone.now() + timedelta(seconds=seconds),
        scope=scope,
        resource=resources,
    )
    set_token_value(token, raw)
    token.save()
    return raw
