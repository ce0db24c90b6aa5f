"""The OTLP/HTTP span exporter the platform's batch processor posts with: the SDK's
(`OTLPSpanExporter`: its endpoint, headers, compression, TLS and retries from the
OTEL_EXPORTER_OTLP_* settings), with an encoder of its own.

The SDK's encoder turns each attribute into protobuf messages through three Python calls
and, to group spans by resource, hashes the resource (a JSON dump of its attributes) once
per span: most of the CPU an exported run cost (bench/otel_export.py). This one writes the
same `ExportTraceServiceRequest` (the same bytes a collector decodes: tests compare the
two), grouping spans by the resource and scope objects they share.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

logger = logging.getLogger(__name__)

# SpanFlags (trace.proto): the flags say whether the parent is remote, and whether it is.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x300


class SpanExporter(OTLPSpanExporter):
    """`OTLPSpanExporter` with `encode` for its encoder."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        # The SDK's own export, but for the encoder: its client posts, retries and
        # compresses as OTEL_EXPORTER_OTLP_* say.
        result = self._client.export(encode(spans))
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE


def encode(spans: Sequence[ReadableSpan]) -> bytes:
    """`spans` as the serialized `ExportTraceServiceRequest` the SDK's encoder makes (a
    `ResourceSpans` a resource, a `ScopeSpans` a scope within it)."""
    # By the identity of the resource and scope objects (a provider's spans share them).
    grouped: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope
        scopes = grouped.setdefault(id(resource), (resource, {}))[1]
        scopes.setdefault(id(scope), (scope, []))[1].append(_field(b"\x12", _span(span)))
    request = []
    for resource, scopes in grouped.values():
        encoded = [_field(b"\x0a", _attributes(resource.attributes))]  # ResourceSpans.resource
        for scope, encoded_spans in scopes.values():
            scope_spans = [_field(b"\x0a", _scope(scope)), *encoded_spans]
            if scope is not None and scope.schema_url:
                scope_spans.append(_string(b"\x1a", scope.schema_url))
            encoded.append(_field(b"\x12", b"".join(scope_spans)))
        if resource.schema_url:
            encoded.append(_string(b"\x1a", resource.schema_url))
        request.append(_field(b"\x0a", b"".join(encoded)))
    return b"".join(request)


# Protocol buffers' wire format (https://protobuf.dev/programming-guides/encoding/), field
# by field in the order of their numbers, as the protobuf runtime writes them. Each field
# starts with its tag: (number << 3) | wire type, as a varint.


def _span(span: ReadableSpan) -> bytes:
    """A `Span` message (opentelemetry/proto/trace/v1/trace.proto)."""
    context = span.context
    parent = span.parent
    out = [b"\x0a\x10", context.trace_id.to_bytes(16, "big"), b"\x12\x08"]
    out.append(context.span_id.to_bytes(8, "big"))
    if context.trace_state:
        state = ",".join(f"{k}={v}" for k, v in context.trace_state.items())
        out.append(_string(b"\x1a", state))
    if parent is not None:
        out += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
    out.append(_string(b"\x2a", span.name))
    out += (b"\x30", _varint(span.kind.value + 1))  # the SDK's kinds from 0, OTLP's from 1
    if span.start_time:
        out += (b"\x39", _FIXED64.pack(span.start_time))
    if span.end_time:
        out += (b"\x41", _FIXED64.pack(span.end_time))
    if span.attributes:
        out.append(_key_values(b"\x4a", span.attributes))
    if span.dropped_attributes:
        out += (b"\x50", _varint(span.dropped_attributes))
    for event in span.events:
        out.append(_field(b"\x5a", _event(event)))
    if span.dropped_events:
        out += (b"\x60", _varint(span.dropped_events))
    for link in span.links:
        out.append(_field(b"\x6a", _link(link)))
    if span.dropped_links:
        out += (b"\x70", _varint(span.dropped_links))
    status = span.status
    said = _string(b"\x12", status.description) if status.description else b""
    code = b"\x18" + _varint(status.status_code.value) if status.status_code.value else b""
    out.append(_field(b"\x7a", said + code))
    # Field 16, fixed32: whether the parent is remote, and that the flag says so.
    remote = parent is not None and parent.is_remote
    out += (b"\x85\x01", _FIXED32.pack(_IS_REMOTE if remote else _HAS_IS_REMOTE))
    return b"".join(out)


def _event(event: Any) -> bytes:
    out = [b"\x09", _FIXED64.pack(event.timestamp), _string(b"\x12", event.name)]
    if event.attributes:
        out.append(_key_values(b"\x1a", event.attributes))
    if event.dropped_attributes:
        out += (b"\x20", _varint(event.dropped_attributes))
    return b"".join(out)


def _link(link: Any) -> bytes:
    context = link.context
    out = [b"\x0a\x10", context.trace_id.to_bytes(16, "big")]
    out += (b"\x12\x08", context.span_id.to_bytes(8, "big"))
    if context.trace_state:
        state = ",".join(f"{k}={v}" for k, v in context.trace_state.items())
        out.append(_string(b"\x1a", state))
    if link.attributes:
        out.append(_key_values(b"\x22", link.attributes))
    if link.dropped_attributes:
        out += (b"\x28", _varint(link.dropped_attributes))
    out += (b"\x35", _FIXED32.pack(_IS_REMOTE if context.is_remote else _HAS_IS_REMOTE))
    return b"".join(out)


def _scope(scope: Any) -> bytes:
    """An `InstrumentationScope` message."""
    if scope is None:
        return b""
    out = [_string(b"\x0a", scope.name)] if scope.name else []
    if scope.version:
        out.append(_string(b"\x12", scope.version))
    if scope.attributes:
        out.append(_key_values(b"\x1a", scope.attributes))
    return b"".join(out)


def _attributes(attributes: Mapping[str, Any] | None) -> bytes:
    """A `Resource` message: its attributes (field 1)."""
    return _key_values(b"\x0a", attributes) if attributes else b""


def _key_values(tag: bytes, attributes: Mapping[str, Any]) -> bytes:
    """Each attribute as a `KeyValue` in repeated field `tag`."""
    out = []
    for key, value in attributes.items():
        prefix = _KEYS.get(key)
        if prefix is None:
            prefix = _string(b"\x0a", key)
            if len(_KEYS) < 1024:
                _KEYS[key] = prefix
        try:
            encoded = _value(value)
        except TypeError:  # as the SDK's encoder: the attribute is left out, and logged
            logger.exception("Failed to encode key %s", key)
            continue
        out.append(_field(tag, prefix + _field(b"\x12", encoded)))
    return b"".join(out)


def _value(value: Any) -> bytes:
    """An `AnyValue` message."""
    kind = type(value)
    if kind is str:
        return _string(b"\x0a", value)
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is int:
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)  # int64: two's complement
    if kind is float:
        return b"\x21" + _DOUBLE.pack(value)
    if value is None:
        return b""
    if isinstance(value, bool):  # the subclasses of the types above (an enum's value)
        return _value(bool(value))
    if isinstance(value, str):
        return _value(str(value))
    if isinstance(value, int):
        return _value(int(value))
    if isinstance(value, float):
        return _value(float(value))
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):  # an ArrayValue: values, field 1
        return _field(b"\x2a", b"".join(_field(b"\x0a", _value(v)) for v in value))
    if isinstance(value, Mapping):  # a KeyValueList: values, field 1
        pairs = {str(k): v for k, v in value.items()}
        return _field(b"\x32", _key_values(b"\x0a", pairs))
    raise TypeError(f"an attribute of type {kind.__name__}")


def _string(tag: bytes, text: str) -> bytes:
    return _field(tag, text.encode())


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, bytes."""
    size = len(payload)
    return tag + (_SMALL[size] if size < 128 else _varint(size)) + payload


def _varint(number: int) -> bytes:
    if number < 128:
        return _SMALL[number]
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


_SMALL = [bytes([n]) for n in range(128)]
_FIXED64 = struct.Struct("<Q")
_FIXED32 = struct.Struct("<I")
_DOUBLE = struct.Struct("<d")
# The encoded key of each attribute name seen (a process names a few dozen).
_KEYS: dict[str, bytes] = {}
