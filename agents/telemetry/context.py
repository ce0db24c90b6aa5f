"""Which trace a run joins: the request's `traceparent` (W3C), read by a middleware on every
route and answered back; else the OpenTelemetry context it runs in (our MCP server: the MCP
SDK reads `params._meta.traceparent` into it); else a trace of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware
from opentelemetry import trace as otel_trace

from agents.runtime.tracecontext import RunTrace, SpanRef

HEADER = "traceparent"


@dataclass
class RequestTrace:
    """A request's place in a trace. Its first run takes `first`, whose span the answer's
    `traceparent` names; a request that starts more runs gives each a span of its own."""

    parent: SpanRef | None
    first: RunTrace
    taken: bool = field(default=False)

    @classmethod
    def of(cls, header: str | None) -> RequestTrace:
        parent = SpanRef.parse(header)
        return cls(parent, RunTrace.under(parent))

    def run_trace(self) -> RunTrace:
        if not self.taken:
            self.taken = True
            return self.first
        return RunTrace.under(self.parent or self.first.span)


_request: ContextVar[RequestTrace | None] = ContextVar("request_trace", default=None)


def run_trace() -> RunTrace:
    """The trace a run started now joins (see the module's docstring)."""
    request = _request.get()
    if request is not None:
        return request.run_trace()
    context = otel_trace.get_current_span().get_span_context()
    if context.is_valid:
        sampled = bool(context.trace_flags & otel_trace.TraceFlags.SAMPLED)
        return RunTrace.under(SpanRef(context.trace_id, context.span_id, sampled))
    return RunTrace.under(None)


def _answered(request: RequestTrace, response: HttpResponse) -> HttpResponse:
    response.headers[HEADER] = request.first.span.header()
    return response


@sync_and_async_middleware
def trace_context_middleware(
    get_response: Callable[[HttpRequest], Any],
) -> Callable[[HttpRequest], Any]:
    """Every request's trace from its `traceparent`; the answer's `traceparent` names the
    span of the run it started (the trace id alone, for a request that started none)."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            trace = RequestTrace.of(request.headers.get(HEADER))
            token = _request.set(trace)
            try:
                response: Awaitable[HttpResponse] = get_response(request)
                return _answered(trace, await response)
            finally:
                _request.reset(token)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        trace = RequestTrace.of(request.headers.get(HEADER))
        token = _request.set(trace)
        try:
            return _answered(trace, get_response(request))
        finally:
            _request.reset(token)

    return middleware
