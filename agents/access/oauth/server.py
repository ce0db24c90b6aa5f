"""The oauthlib server DOT runs (OAUTH2_SERVER_CLASS), its validator (OAUTH2_VALIDATOR_CLASS)
and its Django adapter (OAUTH2_BACKEND_CLASS), narrowed to what OAuth 2.1 and our clients
need: the authorization code with PKCE S256 and the refresh token, nothing else; resources
of this server only (RFC 8707 invalid_target otherwise); a token requested with no resource
bound to the whole API, `<base>/v1`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from oauth2_provider.oauth2_backends import OAuthLibCore
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2 import WebApplicationServer
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from agents.access.oauth.resources import API, base_url, is_ours

# Where the adapter leaves this server's origin for the validator: not an HTTP_ key, so no
# client can send it (Django names every request header HTTP_...).
BASE_KEY = "X_AGENTBUILDER_BASE"


class Server(WebApplicationServer):
    """Authorization code and refresh token grants, Bearer tokens, revocation. PKCE's
    `plain` is unknown to it, so an authorization request naming it (or naming no method,
    which RFC 7636 reads as plain) is refused with invalid_request, as RFC 7636 4.4.1 says."""

    def __init__(self, request_validator: Any, **kwargs: Any) -> None:
        super().__init__(
            request_validator,
            token_generator=kwargs.get("token_generator"),
            token_expires_in=kwargs.get("token_expires_in"),
            refresh_token_generator=kwargs.get("refresh_token_generator"),
        )
        self.auth_grant._code_challenge_methods = {"S256": code_challenge_method_s256}


class Backend(OAuthLibCore):
    def extract_headers(self, request: HttpRequest) -> dict[str, Any]:
        headers: dict[str, Any] = super().extract_headers(request)
        headers[BASE_KEY] = base_url(request)
        return headers


class Validator(OAuth2Validator):
    def _validate_resource_uris(self, request: Any, resources: list[str]) -> None:
        super()._validate_resource_uris(request, resources)
        base = request.headers.get(BASE_KEY, "")
        for resource in resources:
            if not is_ours(resource, base):
                raise errors.CustomOAuth2Error(
                    error="invalid_target",
                    description=f"The resource '{resource}' is not one this server offers.",
                    request=request,
                )

    def _check_and_set_request_resource(self, request: Any) -> None:
        super()._check_and_set_request_resource(request)
        if not request.resource:
            request.resource = [request.headers.get(BASE_KEY, "") + API]
