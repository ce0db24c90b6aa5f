"""What single sign-on runs with: our OIDC_* settings, read at each use (tests change them),
and the settings mozilla-django-oidc asks for, answered from ours."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

CALLBACK_URL = "sso-callback"  # agents/access/sso/urls.py
# Signatures an ID token may carry: asymmetric only, so that no one holding the client
# secret (or a token that says `none`) can mint one.
ALGORITHMS = ("RS256", "ES256")
TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class SsoConfig:
    issuer: str
    client_id: str
    client_secret: str
    provider_name: str
    groups_claim: str


def sso_config() -> SsoConfig | None:
    """The single sign-on settings, or None when it is off (one of the three is missing)."""
    issuer = settings.OIDC_ISSUER
    client_id = settings.OIDC_CLIENT_ID
    client_secret = settings.OIDC_CLIENT_SECRET
    if not (issuer and client_id and client_secret):
        return None
    return SsoConfig(
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        client_secret=client_secret,
        provider_name=settings.OIDC_PROVIDER_NAME or "SSO",
        groups_claim=settings.OIDC_GROUPS_CLAIM,
    )


def library_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's setting `name` (its `get_settings`): ours where it has one."""
    config = sso_config()
    ours: dict[str, Any] = {
        "OIDC_RP_CLIENT_ID": config.client_id if config else "",
        "OIDC_RP_CLIENT_SECRET": config.client_secret if config else "",
        "OIDC_RP_SCOPES": settings.OIDC_SCOPES,
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_CREATE_USER": True,
        "OIDC_STORE_ACCESS_TOKEN": False,
        "OIDC_STORE_ID_TOKEN": False,
        "OIDC_TIMEOUT": TIMEOUT_SECONDS,
        "OIDC_AUTHENTICATION_CALLBACK_URL": CALLBACK_URL,
        "OIDC_AUTH_REQUEST_EXTRA_PARAMS": {},
        "OIDC_ALLOW_UNSECURED_JWT": False,
        "LOGIN_REDIRECT_URL": "admin:index",
    }
    if name in ours:
        return ours[name]
    if default:
        return getattr(settings, name, default[0])
    return getattr(settings, name)


def local_login_allowed(user: Any) -> bool:
    """Whether `user` may log in with a password: anyone while single sign-on is off; else
    as OIDC_LOCAL_LOGIN says (`superuser`, `all` or `off`)."""
    if sso_config() is None:
        return True
    mode = settings.OIDC_LOCAL_LOGIN
    return mode == "all" or (mode == "superuser" and bool(user.is_superuser))
