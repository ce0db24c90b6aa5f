"""Body parsers with limits: a body over API_MAX_BODY_BYTES is a 413, read or not; JSON nested
deeper than MAX_DEPTH, or text holding a NUL character, is a 400 before a view sees it."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http import QueryDict
from rest_framework import exceptions, parsers, status

from agentbuilder.errors import Invalid, Loc

# Configs hold JSON Schemas, which jsonschema checks recursively: far deeper input ends in a
# RecursionError. 100 levels is a schema about 50 objects deep, well past real ones.
MAX_DEPTH = 100
NUL_MESSAGE = "text must not contain NUL characters (\\u0000)"


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


def _too_deep(max_depth: int) -> exceptions.ParseError:
    return exceptions.ParseError(f"JSON parse error - nested deeper than {max_depth} levels")


def _check_json(data: Any, max_depth: int) -> None:
    """Raise for nesting past `max_depth` or a NUL anywhere (PostgreSQL text cannot hold one).

    Iterative, stacking only containers: the data may be nearly as deep as the interpreter's
    recursion limit, and a 1 MiB array can hold half a million scalars.
    """
    if isinstance(data, str) and "\x00" in data:
        raise Invalid.at(("body",), NUL_MESSAGE)
    stack: list[tuple[Any, Loc]] = [(data, ("body",))] if isinstance(data, dict | list) else []
    while stack:
        node, loc = stack.pop()
        if len(loc) > max_depth:
            raise _too_deep(max_depth)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(key, str) and "\x00" in key:
                raise Invalid.at(loc, NUL_MESSAGE)
            if isinstance(value, str):
                if "\x00" in value:
                    raise Invalid.at((*loc, key), NUL_MESSAGE)
            elif isinstance(value, dict | list):
                stack.append((value, (*loc, key)))


def _check_form(data: QueryDict) -> None:
    for key, values in data.lists():
        if "\x00" in key:
            raise Invalid.at(("body",), NUL_MESSAGE)
        if any("\x00" in value for value in values):
            raise Invalid.at(("body", key), NUL_MESSAGE)


class LimitedParserMixin:
    max_body_bytes: int | None = None

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        limit = self.max_body_bytes or settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        meta = request.META if request is not None else {}
        return super().parse(_bounded(stream, meta, limit), media_type, parser_context)  # type: ignore[misc]


class JSONParser(LimitedParserMixin, parsers.JSONParser):
    max_depth: int = MAX_DEPTH

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _too_deep(self.max_depth) from None
        _check_json(data, self.max_depth)
        return data


class FormParser(LimitedParserMixin, parsers.FormParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _check_form(data)
        return data
