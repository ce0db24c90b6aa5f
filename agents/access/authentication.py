"""Who is calling: the Bearer token of every /v1 request (DRF's authentication class, named
in settings), and how the OpenAPI document describes it.

Two kinds of token: the JWTs of POST /v1/auth/token, and the OAuth access tokens of the
authorization server (agents.access.oauth), which are good only on the resources they were
issued for and carry scopes."""

from __future__ import annotations

from typing import Any

import jwt
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agents.access.oauth.resources import covers, documented_resource, metadata_url, scope_needed
from agents.access.oauth.tokens import looks_like_jwt, oauth_access_find
from agents.access.tokens import Claims, credentials_current, token_decode, token_holder


class InsufficientScope(exceptions.PermissionDenied):
    """RFC 6750 3.1's insufficient_scope: a 403 whose challenge names the scope needed."""

    def __init__(self, request: Any, scope: str) -> None:
        super().__init__(f"The token's scopes do not include {scope}.")
        self.auth_header = bearer_challenge(request, f'error="insufficient_scope", scope="{scope}"')


def bearer_challenge(request: Any, error: str | None = None) -> str:
    """A 401's (or 403's) `WWW-Authenticate`: the API's Bearer challenge, RFC 6750's error
    when a token was presented, and on MCP and A2A where an OAuth client finds the
    resource's metadata (RFC 9728 5.1; the MCP authorization specification starts there)."""
    # Here, not at the top: DRF imports this module while its views module loads, which the
    # errors module imports.
    from agentbuilder.api.errors import BEARER_CHALLENGE

    if error is None and _bearer_token(request):
        error = 'error="invalid_token"'
    parts = [BEARER_CHALLENGE] + ([error] if error else [])
    resource = documented_resource(request.path)
    if resource is not None:
        parts.append(f'resource_metadata="{metadata_url(request, resource)}"')
    return ", ".join(parts)


def _bearer_token(request: Any) -> str | None:
    header = authentication.get_authorization_header(request).decode("latin-1")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`: a JWT from POST /v1/auth/token, or an OAuth access
    token."""

    def authenticate(self, request: Request) -> tuple[Any, Claims] | None:
        token = _bearer_token(request)
        if token is None:
            return None
        if not token:
            raise exceptions.AuthenticationFailed("Bearer token is empty.")
        if not looks_like_jwt(token):
            return self._oauth(request, token)
        try:
            claims = token_decode(token)
        except jwt.ExpiredSignatureError:
            raise exceptions.AuthenticationFailed("Token has expired.") from None
        except jwt.InvalidTokenError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        user = token_holder(claims)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        # A token dies with the password (or client secret) it was issued under.
        if not credentials_current(claims, user):
            raise exceptions.AuthenticationFailed("Token revoked: the credentials changed.")
        return user, claims

    def _oauth(self, request: Any, token: str) -> tuple[Any, Claims]:
        """An OAuth access token's holder, if the token is live and bound to this URL
        (RFC 8707), and holds the scope the request needs."""
        found = oauth_access_find(token)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if found.expired:
            raise exceptions.AuthenticationFailed("Token has expired.")
        if not covers(found.resources, request.build_absolute_uri(request.path)):
            raise exceptions.AuthenticationFailed(
                "The token is not for this resource: it was issued for "
                + ", ".join(found.resources)
                + "."
            )
        claims = Claims(found.user_id, None, "", scopes=found.scopes)
        user = token_holder(claims)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        needed = scope_needed(request.method, request.path)
        if needed is not None and needed not in found.scopes:
            raise InsufficientScope(request, needed)
        return user, claims

    def authenticate_header(self, request: Request) -> str:
        return bearer_challenge(request)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "agents.access.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
