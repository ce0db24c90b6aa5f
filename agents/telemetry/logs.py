"""Trace ids in log lines: every record the console handler writes carries `trace_id` and
`span_id` (hex, as `traceparent` writes them), so a line is found from its trace in a
collector, and a trace from its line. The span is the most precise one known where the
line is logged: the step running there (a tool call's span, which the runtime makes
current), else the run's `invoke_agent` span, else the span the request's answer names
(its `traceparent` header); "0" outside any trace (start-up, a sweep between runs)."""

from __future__ import annotations

import logging

from opentelemetry import trace as otel_trace

from agents.runtime.tracecontext import running
from agents.telemetry import context

NONE = "0"  # as OpenTelemetry's logging instrumentation writes a record outside any trace


class TraceIds(logging.Filter):
    """Adds `trace_id` and `span_id` to each record (one that has them already keeps its
    own); filters nothing out."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "trace_id"):
            record.trace_id, record.span_id = current_ids()
        return True


def current_ids() -> tuple[str, str]:
    """The trace and span ids of the work running here (see the module's docstring)."""
    span = otel_trace.get_current_span().get_span_context()
    if span.is_valid:
        return f"{span.trace_id:032x}", f"{span.span_id:016x}"
    run = running.get()
    if run is None:
        request = context.current()
        run = request.first if request is not None else None
    if run is None:
        return NONE, NONE
    return run.trace_hex, f"{run.span_id:016x}"
