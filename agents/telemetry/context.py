"""Which trace a run joins: the request's `traceparent` (W3C), read by a middleware on every
route and answered back (at `/v1/mcp`, an ASGI endpoint Django's middleware never sees, by
`AsgiTrace`, which prefers the call's `params._meta.traceparent`, as the MCP semantic
conventions say); else the OpenTelemetry context it runs in; else a trace of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
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

    def under(self, span: SpanRef) -> RequestTrace:
        """The same trace, its first run a child of `span` (a span of the same trace the
        request's handler runs in), its id unchanged: the answer named it already."""
        first = RunTrace(self.first.trace_id, self.first.span_id, span.span_id, span.sampled)
        return RequestTrace(span, first, self.taken)

    def run_trace(self) -> RunTrace:
        if not self.taken:
            self.taken = True
            return self.first
        return RunTrace.under(self.parent or self.first.span)


_request: ContextVar[RequestTrace | None] = ContextVar("request_trace", default=None)


def current() -> RequestTrace | None:
    """The trace of the request being served here, if any."""
    return _request.get()


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


@contextmanager
def joined(request: RequestTrace) -> Iterator[None]:
    """Runs started in the block join `request`'s trace: for an ASGI endpoint's handlers,
    which run in tasks of their own, out of the request's context. Under the OpenTelemetry
    span current here, when it is of the same trace (the MCP SDK's server span for the
    call, exported beside ours)."""
    current = otel_trace.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == request.first.trace_id:
        sampled = bool(current.trace_flags & otel_trace.TraceFlags.SAMPLED)
        request = request.under(SpanRef(current.trace_id, current.span_id, sampled))
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class AsgiTrace:
    """The trace of a request to an ASGI endpoint (`/v1/mcp`): its `traceparent` header's,
    or the one its message carries (`carried`), and every answer's `traceparent` header,
    as the middleware answers on Django's routes."""

    def __init__(self, header: str | None) -> None:
        self.trace = RequestTrace.of(header)

    def carried(self, traceparent: object) -> None:
        """The message's own trace context (MCP's `params._meta.traceparent`), when valid,
        wins over the header's: the caller's span that made the call."""
        parent = SpanRef.parse(traceparent) if isinstance(traceparent, str) else None
        if parent is not None:
            self.trace = RequestTrace(parent, RunTrace.under(parent))

    def answering(self, send: Send) -> Send:
        """`send`, adding the header to the answer's start."""

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                value = self.trace.first.span.header().encode()
                message = {
                    **message,
                    "headers": [*message.get("headers", ()), (b"traceparent", value)],
                }
            await send(message)

        return sending


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
