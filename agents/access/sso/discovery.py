"""The issuer's discovery document (OpenID Connect Discovery 1.0), read at the first login
that needs it and kept for an hour; a provider that cannot be reached is an error that names
it, raised to the login views, which show it."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import requests

from agents.access.sso.config import TIMEOUT_SECONDS

log = logging.getLogger(__name__)

KEEP_SECONDS = 3600
WELL_KNOWN = "/.well-known/openid-configuration"


class ProviderUnreachable(Exception):
    """The identity provider did not answer, or not as OpenID Connect says it must."""


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    token_auth_methods: tuple[str, ...]


_kept: dict[str, tuple[float, ProviderMetadata]] = {}
_lock = threading.Lock()


def provider_metadata(issuer: str) -> ProviderMetadata:
    """`issuer`'s endpoints, from its discovery document. Raises ProviderUnreachable."""
    with _lock:
        kept = _kept.get(issuer)
    if kept is not None and time.monotonic() - kept[0] < KEEP_SECONDS:
        return kept[1]
    metadata = _discover(issuer)
    with _lock:
        _kept[issuer] = (time.monotonic(), metadata)
    return metadata


def _discover(issuer: str) -> ProviderMetadata:
    url = issuer + WELL_KNOWN
    try:
        response = requests.get(url, timeout=TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        log.error("single sign-on: the discovery document at %s cannot be read: %s", url, exc)
        raise ProviderUnreachable(f"{url} cannot be read ({type(exc).__name__}).") from exc
    if not isinstance(document, dict):
        raise ProviderUnreachable(f"{url} is not a discovery document.")
    # Discovery 1.0 section 4.3: the document must name the issuer it was asked for, or a
    # provider could speak for another.
    if str(document.get("issuer", "")).rstrip("/") != issuer:
        log.error("single sign-on: %s names issuer %r", url, document.get("issuer"))
        raise ProviderUnreachable(f"{url} names another issuer: {document.get('issuer')!r}.")
    try:
        return ProviderMetadata(
            issuer=document["issuer"],
            authorization_endpoint=str(document["authorization_endpoint"]),
            token_endpoint=str(document["token_endpoint"]),
            jwks_uri=str(document["jwks_uri"]),
            userinfo_endpoint=document.get("userinfo_endpoint"),
            token_auth_methods=tuple(document.get("token_endpoint_auth_methods_supported", ())),
        )
    except KeyError as exc:
        raise ProviderUnreachable(f"{url} lacks {exc.args[0]}.") from exc
