"""Body parsers with limits: a body over API_MAX_BODY_BYTES is a 413, read or not; JSON nested
deeper than MAX_DEPTH, or text PostgreSQL cannot store (a NUL character, a lone surrogate), is
a 400 naming where, before a view sees it. `loads_json` holds a JSON text inside a form field
to the same rules."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http import QueryDict
from rest_framework import exceptions, parsers, status

from agentbuilder.api.middleware import max_body_bytes
from agentbuilder.errors import Invalid, Loc

# Configs hold JSON Schemas, which jsonschema checks recursively: far deeper input ends in a
# RecursionError. 100 levels is a schema about 50 objects deep, well past real ones.
MAX_DEPTH = 100
NUL_MESSAGE = "text must not contain NUL characters (\\u0000)"
SURROGATE_MESSAGE = "text must be valid Unicode, without lone surrogates (\\ud800-\\udfff)"


def text_problem(value: str) -> str | None:
    """Why PostgreSQL (and UTF-8) cannot hold this text, or None."""
    if "\x00" in value:
        return NUL_MESSAGE
    if not value.isascii():
        # JSON's "\ud800" escape decodes to a surrogate that no UTF-8 encoder accepts.
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return SURROGATE_MESSAGE
    return None


def check_text(value: str, loc: Loc) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise Invalid.at(loc, problem)


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


def _too_deep(loc: Loc, max_depth: int) -> Invalid:
    return Invalid.at(loc, f"JSON nested deeper than {max_depth} levels", "json_invalid")


def check_json(data: Any, loc: Loc = ("body",), max_depth: int = MAX_DEPTH) -> None:
    """Raise Invalid for nesting past `max_depth` or text `text_problem` refuses, in a key
    (located at its object) or a value.

    Iterative, stacking only containers: the data may be nearly as deep as the interpreter's
    recursion limit, and a 1 MiB array can hold half a million scalars.
    """
    if isinstance(data, str):
        check_text(data, loc)
    stack: list[tuple[Any, Loc]] = [(data, loc)] if isinstance(data, dict | list) else []
    while stack:
        node, at = stack.pop()
        if len(at) - len(loc) >= max_depth:
            raise _too_deep(loc, max_depth)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(key, str):
                check_text(key, at)
            if isinstance(value, str):
                check_text(value, (*at, key))
            elif isinstance(value, dict | list):
                stack.append((value, (*at, key)))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_json(text: str, loc: Loc, max_depth: int = MAX_DEPTH) -> Any:
    """A JSON text held in a form field, checked as a JSON body is; Invalid at `loc`."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise Invalid.at(loc, f"not valid JSON: {exc.msg}", "json_invalid") from None
    except ValueError as exc:  # NaN, Infinity
        raise Invalid.at(loc, f"not valid JSON: {exc}", "json_invalid") from None
    except RecursionError:
        raise _too_deep(loc, max_depth) from None
    check_json(data, loc, max_depth)
    return data


def _check_form(data: QueryDict) -> None:
    for key, values in data.lists():
        check_text(key, ("body",))
        for value in values:
            check_text(value, ("body", key))


class LimitedParserMixin:
    """Holds a body to its route's limit (the one rule: middleware.max_body_bytes)."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        request = (parser_context or {}).get("request")
        limit = settings.API_MAX_BODY_BYTES if request is None else max_body_bytes(request.path)
        meta = request.META if request is not None else {}
        return super().parse(_bounded(stream, meta, limit), media_type, parser_context)  # type: ignore[misc]


class JSONParser(LimitedParserMixin, parsers.JSONParser):
    max_depth: int = MAX_DEPTH

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _too_deep(("body",), self.max_depth) from None
        check_json(data, ("body",), self.max_depth)
        return data


class FormParser(LimitedParserMixin, parsers.FormParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _check_form(data)
        return data


class MultiPartParser(LimitedParserMixin, parsers.MultiPartParser):
    """Form fields and file names held to `text_problem` (they are stored as text)."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        parsed = super().parse(stream, media_type, parser_context)
        _check_form(parsed.data)
        for key, upload in parsed.files.items():
            check_text(upload.name or "", ("body", key))
        return parsed


class _BytesParser(parsers.BaseParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return stream.read() if stream is not None else b""


class JSONLinesParser(LimitedParserMixin, _BytesParser):
    """JSON Lines (one JSON value a line, blank lines skipped) as a list: a dataset's cases
    as files hold them. A bad line is a 400 at its index among the values."""

    media_type = "application/jsonl"

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        raw = super().parse(stream, media_type, parser_context)  # the bounded body's bytes
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Invalid.at(("body",), f"not UTF-8: {exc.reason}", "json_invalid") from None
        values: list[Any] = []
        for line in text.splitlines():
            if line.strip():
                values.append(loads_json(line, ("body", len(values))))
        return values


class NDJSONParser(JSONLinesParser):
    media_type = "application/x-ndjson"
