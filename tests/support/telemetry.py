"""Spans exported to the SDK's in-memory exporter, read back by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents.telemetry import spans

# A caller's span, as its `traceparent` names it.
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """Runs export their spans here for the test (as with OTEL_EXPORTER_OTLP_ENDPOINT set)."""
    exporter = InMemorySpanExporter()
    spans.use_processor(SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        spans.use_processor(None)


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None
