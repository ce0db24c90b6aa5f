"""Body parsers with a size limit: a body over API_MAX_BODY_BYTES is a 413, read or not."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers, status


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body is too large."
    default_code = "request_too_large"


def _bounded(stream: IO[bytes], meta: Mapping[str, Any], limit: int) -> IO[bytes]:
    declared = meta.get("CONTENT_LENGTH") or 0
    if int(declared) > limit:
        raise RequestTooLarge(f"Request body is larger than {limit} bytes.")
    # A client may lie about (or omit) Content-Length: read one byte past the limit to know.
    body = stream.read(limit + 1)
    if len(body) > limit:
        raise RequestTooLarge(f"Request body is larger than {limit} bytes.")
    return io.BytesIO(body)


class LimitedParserMixin:
    max_body_bytes: int | None = None

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        limit = self.max_body_bytes or settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        meta = request.META if request is not None else {}
        return super().parse(_bounded(stream, meta, limit), media_type, parser_context)  # type: ignore[misc]


class JSONParser(LimitedParserMixin, parsers.JSONParser):
    pass


class FormParser(LimitedParserMixin, parsers.FormParser):
    pass
