"""A run's steps (model calls, tool calls, retrievals, guardrail interventions), collected
in memory beside its events and recorded with the run at its end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from agents.runtime.steps import StepDetail, step_json
from agents.runtime.tracecontext import RunTrace, SpanRef, new_span_id

MAX_BYTES = 4096  # of a tool call's arguments, result or error, as UTF-8


def cut(text: str, limit: int = MAX_BYTES) -> str:
    """`text` cut to `limit` bytes of UTF-8, never in the middle of a character."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


# The step whose work is running (a tool call running a nested task agent): steps started
# inside it name it as their parent. A context variable, so concurrent tool calls of one
# model step (each in its own task) each see their own.
_within: ContextVar[Step | None] = ContextVar("trace_within", default=None)


@dataclass
class Trace:
    """The steps of one run, in the order they started (concurrent tool calls included);
    `root`, the run's place in its trace (agents.runtime.tracecontext), None in tests of
    the runtime alone."""

    root: RunTrace | None = None
    _started: list[Step] = field(default_factory=list)

    def start(self, kind: str, detail: StepDetail | None = None) -> Step:
        """A step begun now; `detail` is what it reports if it never ends."""
        step = Step(kind, detail)
        self.add(step)
        return step

    def add(self, step: Step) -> None:
        """A step timed apart, kept only once it proved worth keeping."""
        step.parent = _within.get()
        self._started.append(step)

    @contextmanager
    def within(self, step: Step) -> Iterator[None]:
        """Steps started in this block are `step`'s own (a nested task agent's), and so is
        the work of OpenTelemetry-aware clients (the MCP SDK puts the step's span in its
        requests' `params._meta.traceparent`)."""
        token = _within.set(step)
        span = self.span_of(step)
        otel_token = None
        if span is not None:
            otel_token = otel_context.attach(otel_trace.set_span_in_context(_otel_span(span)))
        try:
            yield
        finally:
            if otel_token is not None:
                otel_context.detach(otel_token)
            _within.reset(token)

    def span_of(self, step: Step) -> SpanRef | None:
        """The span that will stand for `step` in the run's trace."""
        if self.root is None:
            return None
        return SpanRef(self.root.trace_id, step.span_id, self.root.sampled)

    @property
    def started(self) -> list[Step]:
        """The steps themselves, in the order they started (for the run's spans)."""
        return list(self._started)

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.records()

    def records(self, offset: int = 0) -> list[dict[str, Any]]:
        """The steps as recorded after `offset` earlier ones (a resumed run's are added to
        those of its turns before), each parent named by its position among all."""
        position = {id(step): offset + i for i, step in enumerate(self._started)}
        return [
            step.record(position.get(id(step.parent)) if step.parent else None)
            for step in self._started
        ]


class Step:
    """One step timed on the monotonic clock. A step the run left unfinished (a guardrail
    closed the model's stream, the client went away) is reported `canceled`."""

    def __init__(self, kind: str, detail: StepDetail | None = None) -> None:
        self.kind = kind
        self.detail = detail
        self.started_at = datetime.now(UTC)
        self._start = time.monotonic()
        self._ended: dict[str, Any] | None = None
        self.parent: Step | None = None
        self.span_id = new_span_id()
        self.status = "canceled"  # until it ends
        self.reported: StepDetail | None = detail  # what it reports: its end's, once it ends
        self.ended_after_ns: int | None = None  # of the monotonic clock, from its start

    def elapsed_ns(self) -> int:
        return int((time.monotonic() - self._start) * 1e9)

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self._start) * 1000)

    def end(self, status: str, detail: StepDetail) -> None:
        if self._ended is None:
            self.ended_after_ns = self.elapsed_ns()
            self.reported, self.status = detail, status
            self._ended = {
                "latencyMs": self.ended_after_ns // 1_000_000,
                "status": status,
                **step_json(detail),
            }

    def record(self, parent: int | None = None) -> dict[str, Any]:
        """The step as docs/api.md#run-steps lists it; `parent`, the position of the step it ran
        inside (a nested task agent's steps name their tool call)."""
        ended = self._ended or {"latencyMs": self.elapsed_ms(), "status": "canceled"}
        nested = {} if parent is None else {"parent": parent}
        return {
            "type": self.kind,
            "startedAt": self.started_at.isoformat().replace("+00:00", "Z"),
            **(step_json(self.detail) if self.detail is not None else {}),
            **nested,
            **ended,
        }


def _otel_span(span: SpanRef) -> otel_trace.NonRecordingSpan:
    flags = otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED if span.sampled else 0)
    context = otel_trace.SpanContext(span.trace_id, span.span_id, False, flags)
    return otel_trace.NonRecordingSpan(context)
