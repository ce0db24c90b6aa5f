"""W3C trace context (https://www.w3.org/TR/trace-context/) of a run: which trace it
belongs to, the id of its own `invoke_agent` span and the caller's span it continues.

Every run has one, exported or not: its trace id is on the run record (`traceId`) and in
the answer's `traceparent` header, so logs, answers and a collector's traces correlate.
Span ids are drawn when a step starts, not when spans are exported at the run's end, so
the calls a step makes (a model provider's HTTP request, an MCP tool call) carry the id
of the span that will stand for it.
"""

from __future__ import annotations

import random
import re
from contextvars import ContextVar
from dataclasses import dataclass

_HEADER = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


def new_span_id() -> int:
    # `random` as the SDK's own id generator: reseeded in each forked worker.
    return random.getrandbits(64) or 1  # all zeros is the invalid id


def new_trace_id() -> int:
    return random.getrandbits(128) or 1


@dataclass(frozen=True)
class SpanRef:
    """A span as another process or a header names it."""

    trace_id: int
    span_id: int
    sampled: bool = True

    def header(self) -> str:
        """The span as a `traceparent` header's value."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{'01' if self.sampled else '00'}"

    @classmethod
    def parse(cls, header: str | None) -> SpanRef | None:
        """A `traceparent` value's span; None for one that is absent or malformed (the
        recommendation: start a new trace rather than refuse the request)."""
        match = _HEADER.fullmatch(header.strip().lower()) if header else None
        if match is None:
            return None
        version, trace, span, flags, rest = match.groups()
        if version == "ff" or (version == "00" and rest) or not int(trace, 16):
            return None
        if not int(span, 16):
            return None
        return cls(int(trace, 16), int(span, 16), bool(int(flags, 16) & 1))


@dataclass(frozen=True)
class RunTrace:
    """A run's place in a trace: its `invoke_agent` span and the caller's span, if any."""

    trace_id: int
    span_id: int
    parent_id: int | None = None
    sampled: bool = True

    @classmethod
    def under(cls, parent: SpanRef | None) -> RunTrace:
        """A run continuing `parent`'s trace, or starting a trace of its own."""
        if parent is None:
            return cls(new_trace_id(), new_span_id())
        return cls(parent.trace_id, new_span_id(), parent.span_id, parent.sampled)

    @property
    def trace_hex(self) -> str:
        return f"{self.trace_id:032x}"

    @property
    def span(self) -> SpanRef:
        return SpanRef(self.trace_id, self.span_id, self.sampled)

    def as_json(self) -> list[str | bool | None]:
        parent = None if self.parent_id is None else f"{self.parent_id:016x}"
        return [self.trace_hex, f"{self.span_id:016x}", parent, self.sampled]

    @classmethod
    def from_json(cls, data: list[str | bool | None]) -> RunTrace:
        trace, span, parent, sampled = data
        return cls(
            int(str(trace), 16),
            int(str(span), 16),
            None if parent is None else int(str(parent), 16),
            bool(sampled),
        )


# The run whose work runs here: set while its events are made (agents.runs.stream), so log
# lines logged by its work carry its trace (agents.telemetry.logs), wherever it runs (a
# background worker serves no request).
running: ContextVar[RunTrace | None] = ContextVar("running_run_trace", default=None)
