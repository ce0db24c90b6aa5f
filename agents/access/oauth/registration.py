"""Dynamic client registration's request (RFC 7591 section 2), read with the limits an
endpoint anyone may call needs: redirect URIs https or http on a loopback host (RFC 8252),
few of them, short fields, a small body, and only the grants and authentication methods
this server has. Each refusal is RFC 7591's error (`invalid_redirect_uri`,
`invalid_client_metadata`)."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agents.access.oauth.resources import SCOPES

MAX_BODY_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 5
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 100
MAX_TEXT_CHARS = 2000  # any other string the client sends (client_uri, software_id, ...)
MAX_FIELDS = 40
LOOPBACK_NAMES = ("localhost",)
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")


class RegistrationError(Exception):
    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class ClientRegistration:
    redirect_uris: tuple[str, ...]
    client_name: str
    token_endpoint_auth_method: str
    grant_types: tuple[str, ...]
    scope: str | None

    @property
    def public(self) -> bool:
        return self.token_endpoint_auth_method == "none"  # noqa: S105 - a method's name


def _metadata(message: str) -> RegistrationError:
    return RegistrationError("invalid_client_metadata", message)


def registration_parse(body: bytes) -> ClientRegistration:
    """The registration a request body asks for. Raises RegistrationError."""
    if len(body) > MAX_BODY_BYTES:
        raise _metadata(f"The metadata is larger than {MAX_BODY_BYTES} bytes.")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise _metadata("The body is not JSON.") from None
    if not isinstance(data, dict):
        raise _metadata("The body is not a JSON object.")
    if len(data) > MAX_FIELDS:
        raise _metadata(f"The metadata has more than {MAX_FIELDS} fields.")
    for name, value in data.items():
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise _metadata(f"{name} is longer than {MAX_TEXT_CHARS} characters.")
    return ClientRegistration(
        redirect_uris=_redirect_uris(data.get("redirect_uris")),
        client_name=_client_name(data.get("client_name")),
        token_endpoint_auth_method=_auth_method(data.get("token_endpoint_auth_method")),
        grant_types=_grant_types(data.get("grant_types"), data.get("response_types")),
        scope=_scope(data.get("scope")),
    )


def _redirect_uris(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise RegistrationError("invalid_redirect_uri", "redirect_uris is required: a list.")
    if len(value) > MAX_REDIRECT_URIS:
        raise RegistrationError(
            "invalid_redirect_uri", f"At most {MAX_REDIRECT_URIS} redirect_uris."
        )
    for uri in value:
        if not isinstance(uri, str) or not redirect_uri_allowed(uri):
            raise RegistrationError(
                "invalid_redirect_uri",
                f"{str(uri)[:100]!r} is not an https URI or an http URI on a loopback host.",
            )
    return tuple(value)


def redirect_uri_allowed(uri: str) -> bool:
    """https anywhere, or http on 127.0.0.1, [::1] or localhost (RFC 8252 7.3); no
    fragment, no credentials, nothing that is not printable."""
    if len(uri) > MAX_URI_CHARS or not uri.isprintable() or " " in uri or "#" in uri:
        return False
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        return False
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and _loopback(parts.hostname)


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _client_name(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_NAME_CHARS:
        raise _metadata(f"client_name must be text of at most {MAX_NAME_CHARS} characters.")
    return value.strip()


def _auth_method(value: Any) -> str:
    if value is None:
        return "client_secret_basic"  # RFC 7591 2: the default when omitted
    if value not in AUTH_METHODS:
        raise _metadata(f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}.")
    return str(value)


def _grant_types(value: Any, response_types: Any) -> tuple[str, ...]:
    grants = ["authorization_code"] if value is None else value
    if not isinstance(grants, list) or not all(g in GRANT_TYPES for g in grants):
        raise _metadata(f"grant_types may hold only {' and '.join(GRANT_TYPES)}.")
    if "authorization_code" not in grants:
        raise _metadata("grant_types must include authorization_code.")
    if response_types is not None and response_types != ["code"]:
        raise _metadata('response_types must be ["code"].')
    return tuple(dict.fromkeys(grants))


def _scope(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not set(value.split()) <= set(SCOPES):
        raise _metadata(f"scope may hold only {' '.join(SCOPES)}.")
    return " ".join(value.split())
