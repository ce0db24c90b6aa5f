"""The authorization server's endpoints (docs/api.md#oauth): the metadata documents, client
registration, the authorization endpoint with its consent page, and DOT's token and
revocation endpoints. OAuth's own error bodies (`{"error", "error_description"}`), not the
API's."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse, reverse_lazy
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.views import AuthorizationView, TokenView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from agents.access.oauth.registration import AUTH_METHODS, RegistrationError, registration_parse
from agents.access.oauth.resources import A2A, API, MCP, SCOPES, base_url, is_ours, resource_of
from agents.access.oauth.services import oauth_client_register
from agents.access.throttling import ScopedRateThrottle

METADATA_HEADERS = {"Access-Control-Allow-Origin": "*", "Cache-Control": "max-age=300"}


def _endpoint(request: HttpRequest, name: str) -> str:
    return base_url(request) + reverse(name)


def authorization_server_metadata(request: HttpRequest) -> JsonResponse:
    """RFC 8414: what a client needs to know to get a token here."""
    return JsonResponse(
        {
            "issuer": base_url(request),
            "authorization_endpoint": _endpoint(request, "oauth-authorize"),
            "token_endpoint": _endpoint(request, "oauth-token"),
            "registration_endpoint": _endpoint(request, "oauth-register"),
            "revocation_endpoint": _endpoint(request, "oauth-revoke"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "scopes_supported": list(SCOPES),
            "authorization_response_iss_parameter_supported": True,
            "service_documentation": base_url(request) + "/v1/docs",
        },
        headers=METADATA_HEADERS,
    )


RESOURCE_NAMES = {MCP: "agentbuilder MCP server", A2A: "agentbuilder A2A agents"}


def protected_resource_metadata(request: HttpRequest, resource_path: str) -> JsonResponse:
    """RFC 9728: the resource at `resource_path` and who issues its tokens."""
    return JsonResponse(
        {
            "resource": resource_of(request, resource_path),
            "authorization_servers": [base_url(request)],
            "scopes_supported": list(SCOPES),
            "bearer_methods_supported": ["header"],
            "resource_name": RESOURCE_NAMES[resource_path],
            "resource_documentation": base_url(request) + "/v1/docs",
        },
        headers=METADATA_HEADERS,
    )


def oauth_error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


def throttled(request: HttpRequest, view: View, what: str) -> HttpResponse | None:
    """A 429 in OAuth's error shape when the address has spent the view's throttle_scope."""
    throttle = ScopedRateThrottle()
    if throttle.allow_request(request, view):  # type: ignore[arg-type]
        return None
    wait = int(throttle.wait() or 0) + 1
    response = oauth_error("invalid_request", f"Too many {what}; retry in {wait} s.", 429)
    response["Retry-After"] = str(wait)
    return response


@method_decorator(csrf_exempt, name="dispatch")  # no cookie is read: anyone may register
class RegistrationView(View):
    """RFC 7591: a new client, public or confidential, with the limits of registration.py
    and a budget of registrations per address (THROTTLE_OAUTH_REGISTER_RATE)."""

    throttle_scope = "oauth_register"
    http_method_names = ["post", "options"]

    def post(self, request: HttpRequest) -> HttpResponse:
        refused = throttled(request, self, "registrations")
        if refused is not None:
            return refused
        try:
            registration = registration_parse(request.body)
        except RegistrationError as exc:
            return oauth_error(exc.error, exc.description)
        registered = oauth_client_register(registration=registration)
        application = registered.application
        body: dict[str, Any] = {
            "client_id": application.client_id,
            "client_id_issued_at": int(application.created.timestamp()),
            "client_name": application.name,
            "redirect_uris": list(registration.redirect_uris),
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": registration.token_endpoint_auth_method,
        }
        if registration.scope is not None:
            body["scope"] = registration.scope
        if registered.client_secret is not None:
            body["client_secret"] = registered.client_secret
            body["client_secret_expires_at"] = 0  # never
        return JsonResponse(body, status=201, headers={"Cache-Control": "no-store"})


class ConsentView(AuthorizationView):
    """The authorization endpoint: the admin's login first (then back here), then a page
    naming the client, where it sends the answer, the scopes and the resources, with Allow
    and Deny. Deny sends the client error=access_denied; a resource that is not this
    server's, invalid_target."""

    template_name = "oauth/consent.html"
    login_url = reverse_lazy("admin:login")

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # DOT lets a request's `approval_prompt=auto` skip this page when the client holds a
        # live token of the same scopes, whatever resource it is for: a client consented to
        # for /v1/mcp would get a code for the whole API unseen. The page is shown always.
        if "approval_prompt" in request.GET:
            query = request.GET.copy()
            del query["approval_prompt"]
            query._mutable = False
            request.GET = query  # type: ignore[assignment]  # a QueryDict made immutable above
        response: HttpResponse = super().get(request, *args, **kwargs)
        return response

    def validate_authorization_request(self, request: HttpRequest) -> tuple[Any, Any]:
        scopes, credentials = super().validate_authorization_request(request)
        base = base_url(request)
        for resource in request.GET.getlist("resource"):
            if not is_ours(resource, base):
                raise OAuthToolkitError(
                    error=CustomOAuth2Error(
                        error="invalid_target",
                        description=f"The resource '{resource}' is not one this server offers.",
                        state=credentials.get("state"),
                    ),
                    redirect_uri=credentials["redirect_uri"],
                )
        return scopes, credentials

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        redirect_uri = context.get("redirect_uri") or ""
        context["redirect_host"] = urlsplit(redirect_uri).netloc
        resources = str(context.get("resource") or "").split()
        context["resources"] = resources or [resource_of(self.request, API)]
        context["scope_items"] = [(s, SCOPES.get(s, s)) for s in context.get("scopes", [])]
        context["title"] = "Authorize a client"
        return context


class JsonTokenView(TokenView):
    """DOT's token endpoint, throttled per address, whose errors raised past oauthlib's own
    checks (invalid_target) would otherwise leave as text/html."""

    # Token requests per address, counted with POST /v1/auth/token's (THROTTLE_TOKEN_RATE):
    # codes and refresh tokens are long random strings, but nothing should be guessed at
    # without limit.
    throttle_scope = "token"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refused = throttled(request, self, "token requests")
        if refused is not None:
            return refused
        response: HttpResponse = super().post(request, *args, **kwargs)
        response["Content-Type"] = "application/json"
        response["Cache-Control"] = "no-store"
        return response


def resource_metadata_view(resource_path: str) -> Any:
    def view(request: HttpRequest) -> JsonResponse:
        return protected_resource_metadata(request, resource_path)

    return view
