"""Where a change comes from: the surface (API, admin, config import) and the caller's
address, kept in a context variable for the request (or the import), so that services record
them without every caller passing them down."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

from agents.access.throttling import client_address
from agents.models import AuditSurface

ADMIN_PREFIX = "/admin/"


@dataclass(frozen=True)
class Origin:
    surface: str
    ip: str | None = None


# Nothing set: a management command or a task, recorded as `other` with no address.
NO_REQUEST = Origin(AuditSurface.OTHER)  # frozen: safe to share as the default
_origin: ContextVar[Origin] = ContextVar("audit_origin", default=NO_REQUEST)


def current_origin() -> Origin:
    return _origin.get()


@contextmanager
def audit_origin(surface: str, ip: str | None = None) -> Iterator[None]:
    """Changes made inside are recorded as coming from `surface` (and `ip`, else the
    request's address if there is one)."""
    token = _origin.set(Origin(surface, ip if ip is not None else _origin.get().ip))
    try:
        yield
    finally:
        _origin.reset(token)


def _request_origin(request: HttpRequest) -> Origin:
    surface = AuditSurface.ADMIN if request.path.startswith(ADMIN_PREFIX) else AuditSurface.API
    return Origin(surface, client_address(request) or None)


@sync_and_async_middleware
def audit_middleware(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            token = _origin.set(_request_origin(request))
            try:
                response: Awaitable[HttpResponse] = get_response(request)
                return await response
            finally:
                _origin.reset(token)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        token = _origin.set(_request_origin(request))
        try:
            response: HttpResponse = get_response(request)
            return response
        finally:
            _origin.reset(token)

    return middleware
