"""`GET /v1/schema`: the OpenAPI document, generated once per process and served from memory.

Generating it walks every view and pydantic model: seconds of CPU. It depends only on the
code, the URL configuration and the settings, never on who asks (SERVE_PUBLIC), so the
first request generates it (one thread does; the others wait for it) and every later one
is answered with the same bytes, each rendering (YAML, JSON) made once. `?lang=` and
`?version=` are not honoured (one language, one API version), so no query string makes a
second generation; the docs page (/v1/docs) is Swagger UI fetching this view's document.
A strong `ETag` per rendering lets a client that has it revalidate for a 304. A changed
setting (tests override settings and URL configurations) forgets what was built.

Throttled like any request (the view keeps DRF's default throttle classes; without a
token, THROTTLE_ANON_RATE per address): serving from memory makes it cheap, not free.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpResponse, HttpResponseBase
from django.utils import translation
from django.utils.cache import get_conditional_response, patch_vary_headers
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

# Clients revalidate every time (a deploy changes the document); a 304 costs nothing.
CACHE_CONTROL = "no-cache"

# How many times this process generated the document: what the tests count.
generations = 0

_lock = threading.Lock()
_documents: dict[tuple[Any, ...], dict[str, Any]] = {}
_renderings: dict[tuple[Any, ...], _Rendering] = {}


@dataclass(frozen=True)
class _Rendering:
    body: bytes
    content_type: str
    etag: str


def forget(**_: Any) -> None:
    """Drop what was built: the next request generates the document again."""
    with _lock:
        _documents.clear()
        _renderings.clear()


setting_changed.connect(forget, dispatch_uid="agentbuilder.api.schema.forget")


class JsonErrors(APIView):
    """Errors in the API's JSON (docs/api.md#errors), not in the format the page or document
    was asked in (YAML, HTML), nor in the first one when `Accept` named none of them."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class DocsView(JsonErrors, SpectacularSwaggerView):
    """/v1/docs: Swagger UI, which fetches SchemaView's document."""


class SchemaView(JsonErrors, SpectacularAPIView):
    @extend_schema(exclude=True)  # not in the document (SERVE_INCLUDE_SCHEMA)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # One document, in the project's language. SpectacularAPIView writes it in the
        # language of `?lang=` (which the docs page passes on): each new value, valid or
        # not, would be another generation of seconds of CPU, kept in memory for good.
        with translation.override(settings.LANGUAGE_CODE):
            return self._get_schema_response(request)

    def _get_schema_response(self, request: Request) -> HttpResponseBase:
        # The version a versioning scheme picked, if the API had one. SpectacularAPIView
        # would also take any `?version=` when no ALLOWED_VERSIONS are set: a generation
        # per value, as `?lang=` above.
        version = self.api_version or request.version
        document_key = (type(self), version)
        renderer = request.accepted_renderer
        media_type = request.accepted_media_type
        rendering_key = (*document_key, type(renderer), media_type)
        rendering = _renderings.get(rendering_key)
        if rendering is None:
            with _lock:  # one generation at a time; the others then find it made
                rendering = _renderings.get(rendering_key)
                if rendering is None:
                    document = self._document(request, document_key, version)
                    rendered = renderer.render(document, media_type, self.get_renderer_context())
                    body = rendered.encode() if isinstance(rendered, str) else rendered
                    charset = renderer.charset
                    rendering = _Rendering(
                        body=body,
                        # As DRF's Response would have labelled it.
                        content_type=f"{media_type}; charset={charset}" if charset else media_type,
                        etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
                    )
                    _renderings[rendering_key] = rendering
        response = HttpResponse(rendering.body, content_type=rendering.content_type)
        response["ETag"] = rendering.etag
        response["Cache-Control"] = CACHE_CONTROL
        patch_vary_headers(response, ["Accept"])  # the format may come from Accept
        response["Content-Disposition"] = (
            f'inline; filename="{self._get_filename(request, version)}"'
        )
        # If-None-Match naming this rendering: Django's 304, with the headers above.
        conditional = get_conditional_response(request, etag=rendering.etag, response=response)
        return response if conditional is None else conditional

    def _document(self, request: Request, key: tuple[Any, ...], version: Any) -> dict[str, Any]:
        """The generated document for `key` (the caller holds the lock)."""
        global generations
        document = _documents.get(key)
        if document is None:
            generator = self.generator_class(
                urlconf=self.urlconf, api_version=version, patterns=self.patterns
            )
            document = generator.get_schema(request=request, public=self.serve_public)
            generations += 1
            _documents[key] = document
        return document
