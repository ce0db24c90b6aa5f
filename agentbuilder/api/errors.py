"""One exception handler for every /v1 route: the error bodies of docs/api.md#errors.

Domain errors from services, DRF's own exceptions (parse errors, auth, 404, 405, 415,
throttling), Django's 404 and its refusals of oversized or malformed bodies all leave as
`{"detail": ...}` JSON.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import exceptions as dj
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, Field
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from agentbuilder.errors import DomainError, ErrorItem, Invalid, RateLimited

BEARER_CHALLENGE = 'Bearer realm="api"'
FORBIDDEN = "You do not have permission to perform this action."
ADMIN_PREFIX = "/admin/"  # agentbuilder/urls.py mounts the admin here


class ErrorDetailItem(BaseModel):
    loc: list[str | int] = Field(description='Where: ["body", "config", "tools", 0, ...].')
    msg: str
    type: str


class ErrorBody(BaseModel):
    """The error body (docs/api.md#errors), for the OpenAPI document: a message, or (400) the
    located problems."""

    detail: str | list[ErrorDetailItem]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = _handle(exc)
    # RFC 9110: every 401 names the scheme to retry with, bad credentials at /auth/token too:
    # the authentication class's challenge when DRF asked it (with RFC 6750's error and, on
    # MCP and A2A, RFC 9728's resource_metadata), or a 403's for a scope the token lacks.
    challenge = getattr(exc, "auth_header", None)
    if response is not None and response.status_code == 401:
        response["WWW-Authenticate"] = challenge or BEARER_CHALLENGE
    elif response is not None and response.status_code == 403 and challenge:
        response["WWW-Authenticate"] = challenge
    # A refused invocation still has its (failed) run record: say which.
    run_id = getattr(exc, "run_id", None)
    if response is not None and run_id is not None:
        response["X-Run-Id"] = str(run_id)
    return response


def _handle(exc: Exception) -> Response | None:
    if isinstance(exc, Invalid):
        return _respond(400, [e.as_dict() for e in exc.errors])
    if isinstance(exc, DomainError) and exc.context:
        set_rollback()
        return Response({"detail": exc.detail, **exc.context}, status=exc.status)
    if isinstance(exc, RateLimited):
        response = _respond(exc.status, exc.detail)
        response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, DomainError):
        return _respond(exc.status, exc.detail)
    if isinstance(exc, Http404):
        return _respond(404, "Not found.")
    if isinstance(exc, dj.PermissionDenied):
        return _respond(403, FORBIDDEN)
    if isinstance(exc, dj.RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _respond(413, f"Request body is larger than {limit} bytes.")
    if isinstance(exc, dj.TooManyFieldsSent | dj.TooManyFilesSent):
        item = ErrorItem(("body",), str(exc), "too_many_fields")
        return _respond(400, [item.as_dict()])
    if isinstance(exc, dj.SuspiciousOperation):
        return _respond(400, "Bad request.")
    if isinstance(exc, drf.ParseError):
        item = ErrorItem(("body",), str(exc.detail), "json_invalid")
        return _respond(400, [item.as_dict()])
    if isinstance(exc, drf.ValidationError):
        return _respond(400, [e.as_dict() for e in _drf_items(exc.detail, ("body",))])
    if isinstance(exc, drf.APIException):
        response = _respond(exc.status_code, str(exc.detail))
        wait = getattr(exc, "wait", None)  # Throttled's, missing from the stubs
        if isinstance(exc, drf.Throttled) and wait is not None:
            response["Retry-After"] = str(int(wait) + 1)
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


# Django's own handlers, for what fails outside a DRF view (URL resolution, Host checks).


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"detail": "Bad request."}, status=400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"detail": FORBIDDEN}, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # The admin's pages are for people: a page, not the API's JSON (a Http404 raised there,
    # as the playground does for an agent its user may not invoke, ends here).
    if request.path.startswith(ADMIN_PREFIX):
        return defaults.page_not_found(
            request, exception or Http404(), template_name="admin/404.html"
        )
    return JsonResponse({"detail": "Not found."}, status=404)


@csrf_exempt  # any method: a POST to no route is a 404 too, not the CSRF check's 403 page
def unknown_path(request: HttpRequest) -> JsonResponse:
    """An API path no route matches."""
    return JsonResponse({"detail": "Not found."}, status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"detail": "Internal server error."}, status=500)
