"""Refuse an oversized body by its Content-Length, before anyone reads it."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import sync_and_async_middleware

# Uploads have their own limit; every other route takes API_MAX_BODY_BYTES.
UPLOAD_PATHS = ("/v1/documents",)
# The admin's upload form (retrieval/admin/upload.py) sends several files in one body.
ADMIN_UPLOAD_PATHS = ("/admin/retrieval/document/add",)
ADMIN_UPLOAD_DOCUMENTS = 4  # of DOCUMENT_MAX_BYTES each, in one body
# A dataset's cases, up to 10,000 a call (agents.evals.cases), as JSON or JSON Lines.
DATASET_CASES_PATH = re.compile(r"/v1/datasets/[^/]+/cases")


def max_body_bytes(path: str) -> int:
    path = path.rstrip("/")
    if path in UPLOAD_PATHS:
        return int(settings.DOCUMENT_MAX_BYTES) + 64 * 1024
    if path in ADMIN_UPLOAD_PATHS:
        return ADMIN_UPLOAD_DOCUMENTS * int(settings.DOCUMENT_MAX_BYTES) + 64 * 1024
    if DATASET_CASES_PATH.fullmatch(path):
        return int(settings.DATASET_MAX_BODY_BYTES)
    return int(settings.API_MAX_BODY_BYTES)


def _refusal(request: HttpRequest) -> JsonResponse | None:
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return JsonResponse({"detail": "Content-Length is not a number."}, status=400)
    limit = max_body_bytes(request.path)
    if declared > limit:
        return JsonResponse({"detail": f"Request body is larger than {limit} bytes."}, status=413)
    return None


@sync_and_async_middleware
def body_limit(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            refusal = _refusal(request)
            if refusal is not None:
                return refusal
            response: Awaitable[HttpResponse] = get_response(request)
            return await response

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        return _refusal(request) or get_response(request)

    return middleware
