"""The two steps of a sign-on: to the provider (state, nonce and PKCE kept in the session) and
back from it. What goes wrong is a page that says what, never a stack trace: the provider out
of reach (502), a callback that fails the checks (400), a sign-in the provider refused (403)."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.contrib import admin
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from agents.access.sso.config import library_setting, sso_config
from agents.access.sso.discovery import ProviderUnreachable, provider_metadata

log = logging.getLogger(__name__)

TEMPLATE = "admin/agents/sso_error.html"


def error_page(request: HttpRequest, status: int, title: str, reason: str) -> TemplateResponse:
    config = sso_config()
    context = {
        **admin.site.each_context(request),
        "title": title,
        "reason": reason,
        "provider_name": config.provider_name if config else "SSO",
    }
    return TemplateResponse(request, TEMPLATE, context, status=status)


def unreachable(request: HttpRequest, exc: Exception) -> TemplateResponse:
    log.error("single sign-on: the identity provider cannot be reached: %s", exc)
    return error_page(
        request,
        502,
        "Single sign-on is unavailable",
        f"The identity provider cannot be reached: {exc}",
    )


class SsoStart(OIDCAuthenticationRequestView):
    """To the provider's authorization endpoint, from the admin's "Sign in with" button."""

    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs: Any) -> None:
        # Not the library's: it reads the endpoint from settings; ours comes from discovery.
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        config = sso_config()
        if config is None:
            raise Http404
        try:
            metadata = provider_metadata(config.issuer)
        except ProviderUnreachable as exc:
            return unreachable(request, exc)
        self.OIDC_OP_AUTH_ENDPOINT = metadata.authorization_endpoint
        self.OIDC_RP_CLIENT_ID = config.client_id
        response: HttpResponse = super().get(request)
        return response


class SsoCallback(OIDCAuthenticationCallbackView):
    """Back from the provider: the state found in the session, the code exchanged, the user
    logged in (agents.access.sso.backends.OidcBackend) and sent where the login began."""

    get_settings = staticmethod(library_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if sso_config() is None:
            raise Http404
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnreachable as exc:
            return unreachable(request, exc)
        except requests.HTTPError as exc:
            log.warning("single sign-on: the provider refused the code: %s", exc)
            return error_page(
                request, 400, "Sign-in refused", "The identity provider refused the sign-in code."
            )
        except requests.RequestException as exc:
            return unreachable(request, exc)
        except SuspiciousOperation as exc:
            log.warning("single sign-on: callback refused: %s", exc)
            return error_page(request, 400, "Sign-in refused", str(exc))
        return response

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error")
        reason = (
            f"The identity provider answered: {error}."
            if error
            else "The sign-in did not complete (no sign-in was started here, or the account "
            "is inactive). Try again from the login page."
        )
        return error_page(self.request, 403, "Not signed in", reason)
