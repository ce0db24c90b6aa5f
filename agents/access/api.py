"""POST /v1/auth/token (docs/api.md#auth-and-tokens): access tokens for API clients and users."""

from __future__ import annotations

from typing import Literal

from drf_spectacular.utils import extend_schema
from pydantic import Field
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.parsers import FormParser, JSONParser
from agentbuilder.api.views import ApiView, render
from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.throttling import ScopedRateThrottle, credential_attempt
from agents.access.tokens import token_for_client, token_for_user


class TokenRequest(CamelModel):
    model_config = CamelModel.model_config | {"alias_generator": None}

    grant_type: Literal["client_credentials", "password"]
    client_id: str | None = Field(None, max_length=200)
    client_secret: str | None = Field(None, max_length=500)
    username: str | None = Field(None, max_length=150)
    password: str | None = Field(None, max_length=500)
    scope: str | None = None  # accepted and ignored, as OAuth clients send it


class TokenOut(OutputModel):
    model_config = OutputModel.model_config | {"alias_generator": None}

    access_token: str
    token_type: Literal["Bearer"] = "Bearer"  # noqa: S105 - a scheme name, not a secret
    expires_in: int


class TokenView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, FormParser]
    throttle_classes = [ScopedRateThrottle]  # per address; credential_attempt: per account
    throttle_scope = "token"

    @extend_schema(
        operation_id="auth_token",
        request={
            "application/json": TokenRequest,
            "application/x-www-form-urlencoded": TokenRequest,
        },
        responses={200: TokenOut},
        auth=[],
        tags=["auth"],
        summary="Get an access token (client credentials or password grant)",
    )
    def post(self, request: Request) -> Response:
        body = self.body(TokenRequest)
        if body.grant_type == "client_credentials":
            client_id = _required(body.client_id, "client_id")
            client_secret = _required(body.client_secret, "client_secret")
            with credential_attempt(f"client:{client_id}"):
                issued = token_for_client(client_id=client_id, client_secret=client_secret)
        else:
            username = _required(body.username, "username")
            password = _required(body.password, "password")
            with credential_attempt(f"user:{username}"):
                issued = token_for_user(username=username, password=password)
        return render(TokenOut(access_token=issued.access_token, expires_in=issued.expires_in))


def _required(value: str | None, field: str) -> str:
    if not value:
        raise Invalid.at(("body", field), "Field required", "missing")
    return value
