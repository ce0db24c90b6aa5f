"""The authentication backends: Django's password login, narrowed by OIDC_LOCAL_LOGIN while
single sign-on is on (the admin's form and the API's password grant both ask it), and the
OpenID Connect one, mozilla-django-oidc's with the endpoints of the issuer's discovery
document and an ID token checked for its signature, issuer, audience, expiry and nonce."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import jwt
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from agentbuilder.users import User
from agents.access.sso.config import (
    ALGORITHMS,
    SsoConfig,
    library_setting,
    local_login_allowed,
    sso_config,
)
from agents.access.sso.discovery import ProviderMetadata, provider_metadata
from agents.access.sso.services import sso_login

log = logging.getLogger(__name__)


class LocalBackend(ModelBackend):
    """Django's user name and password, for those OIDC_LOCAL_LOGIN lets in."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        user = super().authenticate(request, username, password, **kwargs)
        if user is None or local_login_allowed(user):
            return user
        log.info("password login refused for %s: OIDC_LOCAL_LOGIN", user.get_username())
        return None


class OidcBackend(OIDCAuthenticationBackend):
    """The callback's code exchanged for tokens, the ID token checked, the user found by
    the issuer and `sub` (or made), its groups set from the claim."""

    config: SsoConfig
    metadata: ProviderMetadata

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not the library's: it wants fixed endpoints in settings, ours come from discovery
        # when a login needs them. An RS/ES algorithm makes verify_token take the JWKS's key.
        self.UserModel = get_user_model()
        self.OIDC_RP_SIGN_ALGO = ALGORITHMS[0]
        self.OIDC_RP_IDP_SIGN_KEY = None

    def get_settings(self, name: str, *default: Any) -> Any:
        return library_setting(name, *default)

    def get_user(self, user_id: Any) -> Any:
        # Django's, not the library's: an inactive user's session ends here too.
        return ModelBackend.get_user(self, user_id)

    def authenticate(
        self, request: HttpRequest | None, *, nonce: str | None, code_verifier: str | None = None
    ) -> User | None:
        # Keyword-only `nonce`: Django calls this backend only with the callback's
        # credentials, never with a password form's (whose URL might carry a code).
        config = sso_config()
        if config is None or request is None or not nonce:
            return None
        self.config = config
        self.metadata = provider_metadata(config.issuer)
        self.OIDC_OP_TOKEN_ENDPOINT = self.metadata.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = self.metadata.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = self.metadata.jwks_uri
        self.OIDC_RP_CLIENT_ID = config.client_id
        self.OIDC_RP_CLIENT_SECRET = config.client_secret
        user: User | None = super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        return user

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        # client_secret_basic, OpenID Connect's default, with the id and secret form-encoded
        # as RFC 6749 section 2.3.1 wants (the library sends them raw).
        payload = {k: v for k, v in payload.items() if k not in ("client_id", "client_secret")}
        auth = (quote(self.config.client_id, safe=""), quote(self.config.client_secret, safe=""))
        response = requests.post(
            self.OIDC_OP_TOKEN_ENDPOINT,
            data=payload,
            auth=auth,
            timeout=self.get_settings("OIDC_TIMEOUT"),
        )
        self.raise_token_response_error(response)
        answer = response.json()
        if not isinstance(answer, dict):
            raise SuspiciousOperation("The token endpoint answered no JSON object.")
        return answer

    def verify_token(self, token: Any, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(token, str):
            raise SuspiciousOperation("The provider returned no ID token.")
        try:
            alg = jwt.get_unverified_header(token).get("alg")
            if alg not in ALGORITHMS:
                allowed = " or ".join(ALGORITHMS)
                raise SuspiciousOperation(f"ID token signed with {alg!r}, not {allowed}.")
            payload: dict[str, Any] = super().verify_token(token, **kwargs)
        except (jwt.PyJWTError, KeyError, ValueError) as exc:
            raise SuspiciousOperation(f"ID token refused: {exc}") from exc
        return payload

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        # The library's skips the audience; OpenID Connect Core 3.1.3.7 wants it, the
        # issuer and the times checked.
        claims: dict[str, Any] = jwt.decode(
            payload,
            key,
            algorithms=list(ALGORITHMS),
            audience=self.config.client_id,
            issuer=self.metadata.issuer,
            options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )
        return claims

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The ID token's claims, with the userinfo endpoint's over them."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            info = super().get_userinfo(access_token, id_token, payload)
            # OpenID Connect Core 5.3.2: a userinfo answer for another subject is not used.
            if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("The userinfo answer is for another subject.")
            claims.update(info)
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> User:
        claims = self.get_userinfo(access_token, id_token, payload)
        return sso_login(
            issuer=self.config.issuer, claims=claims, groups_claim=self.config.groups_claim
        )
