"""Who is calling: the Bearer token of every /v1 request (DRF's authentication class, named
in settings), and how the OpenAPI document describes it."""

from __future__ import annotations

from typing import Any

import jwt
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agents.access.tokens import Claims, credentials_current, token_decode, token_holder


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <JWT>` from POST /v1/auth/token."""

    def authenticate(self, request: Request) -> tuple[Any, Claims] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        if not token:
            raise exceptions.AuthenticationFailed("Bearer token is empty.")
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

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "agents.access.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
