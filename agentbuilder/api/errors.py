"""One exception handler for every /v1 route: SPEC section 2's error bodies.

Domain errors from services, DRF's own exceptions (parse errors, auth, 404, 405, 415,
throttling) and Django's 404 all leave as `{"detail": ...}` JSON.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from agentbuilder.errors import DomainError, ErrorItem, Invalid


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Invalid):
        return _respond(400, [e.as_dict() for e in exc.errors])
    if isinstance(exc, DomainError):
        return _respond(exc.status, exc.detail)
    if isinstance(exc, Http404):
        return _respond(404, "Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        return _respond(403, "You do not have permission to perform this action.")
    if isinstance(exc, drf.ParseError):
        item = ErrorItem(("body",), str(exc.detail), "json_invalid")
        return _respond(400, [item.as_dict()])
    if isinstance(exc, drf.ValidationError):
        return _respond(400, [e.as_dict() for e in _drf_items(exc.detail, ("body",))])
    if isinstance(exc, drf.APIException):
        response = _respond(exc.status_code, str(exc.detail))
        if isinstance(exc, drf.Throttled) and exc.wait is not None:
            response["Retry-After"] = str(int(exc.wait) + 1)
        if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    return None


def _respond(status: int, detail: Any) -> Response:
    set_rollback()
    return Response({"detail": detail}, status=status)


def _drf_items(detail: Any, loc: tuple[str | int, ...]) -> list[ErrorItem]:
    if isinstance(detail, dict):
        return [i for k, v in detail.items() for i in _drf_items(v, (*loc, k))]
    if isinstance(detail, list):
        if all(isinstance(d, str) for d in detail):
            return [ErrorItem(loc, str(d), getattr(d, "code", "invalid")) for d in detail]
        return [i for n, v in enumerate(detail) for i in _drf_items(v, (*loc, n))]
    return [ErrorItem(loc, str(detail), getattr(detail, "code", "invalid"))]


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"detail": "Not found."}, status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"detail": "Internal server error."}, status=500)
