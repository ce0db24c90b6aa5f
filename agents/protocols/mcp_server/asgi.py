"""`/v1/mcp`: the MCP SDK's streamable HTTP transport in front of our server's handlers
(agents.protocols.mcp_server.server).

Before the SDK sees a request, the caller is read from the Bearer token and the request is
throttled, as on every /v1 route: the same authentication class, the same throttles, the
same environment rule, and their refusals in the JSON of docs/api.md#errors (a 401 with its
`WWW-Authenticate` challenge, naming where the resource's OAuth metadata is, RFC 9728).
The caller then travels in the ASGI scope to the handlers.

Before that, the two checks against DNS rebinding (docs/api.md#mcp, and the transport
specification's "servers MUST validate the Origin header"): `Host` through Django's own
ALLOWED_HOSTS check, answered as Django answers it on every other route (400), and a
present `Origin` against MCP_ALLOWED_ORIGINS (403); SDK clients send no Origin and pass.
The SDK has a guard of its own (TransportSecuritySettings), not used: it matches hosts
by its own rules rather than ALLOWED_HOSTS', answers in plain text (421 for a host), and
runs inside the transport, after authentication.

Then the body, read here (within the SDK's own size limit) and handed on to it unchanged,
is held to agents.protocols.mcp_server.envelope: bounded echoed fields, storable text. A
`notifications/cancelled` is acted on here, before the SDK acknowledges it: the SDK tracks
requests within one stateless exchange only and drops it, while the run it names may be
running in any process (agents.protocols.mcp_server.server.cancel_requested). A
`tools/call` from a caller whose tokensPerMinute is spent is refused here too, a 429 as
the throttles answer (agents.access.rate_limits).

Stateless: every POST stands alone (no `Mcp-Session-Id`), so the web tier keeps no state
of its own and any worker of any host can answer any request (docs/architecture.md#decisions).
Answers are SSE, so progress notifications reach the client while the agent runs.

The SDK's session manager needs a running task group, which it normally gets from the ASGI
lifespan; our servers run with the lifespan off (`make run`), so each event loop starts
its own manager at its first MCP request, in a task of its own that lives as long as the
loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import json
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions
from rest_framework.views import APIView
from starlette.types import Message, Receive, Scope, Send

from agentbuilder import liveness
from agentbuilder.api.errors import exception_handler
from agentbuilder.api.middleware import max_body_bytes
from agentbuilder.api.parsers import check_text
from agentbuilder.db import in_db
from agentbuilder.errors import DomainError, Invalid, RateLimited
from agents.access.authentication import (
    BearerTokenAuthentication,
    InsufficientScope,
    bearer_challenge,
)
from agents.access.environments import environment_resolve
from agents.access.oauth.resources import INVOKE, READ, mcp_scope_needed
from agents.access.rate_limits import caller_limits, tokens_admit
from agents.protocols.mcp_server.envelope import Refusal, refusal
from agents.protocols.mcp_server.request import Caller
from agents.protocols.mcp_server.server import (
    CALLER_KEY,
    HANDLERS_KEY,
    TRACE_KEY,
    cancel_requested,
    server,
)
from agents.runs.request import call_depth_of
from agents.telemetry.context import HEADER, AsgiTrace

PATH = "/v1/mcp"
# RFC 9728's metadata of this protected resource (agents.access.oauth.views).
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + PATH

logger = logging.getLogger(__name__)


def request_of(scope: Scope) -> ASGIRequest:
    """Django's reading of the request's headers (no body): its Host rules, its scheme
    behind a proxy (SECURE_PROXY_SSL_HEADER), and what DRF's authentication and throttle
    classes read, so the REST API's own classes run here unchanged."""
    return ASGIRequest(scope, io.BytesIO())


def check_host_and_origin(request: ASGIRequest) -> None:
    """Raises DisallowedHost for a Host that ALLOWED_HOSTS does not allow, PermissionDenied
    for a present Origin that MCP_ALLOWED_ORIGINS does not list."""
    try:
        request.get_host()
    except DisallowedHost as exc:
        # As Django's handler logs it for every other route.
        logging.getLogger("django.security.DisallowedHost").error(str(exc))
        raise
    origin = request.headers.get("Origin")
    if origin is None:
        return
    allowed = {o.strip().rstrip("/").lower() for o in settings.MCP_ALLOWED_ORIGINS}
    if origin.strip().rstrip("/").lower() not in allowed:
        # A browser sends Origin; a page on a site not listed may have rebound its name to
        # this server (or be any site the user visits): it gets nothing.
        logger.warning("MCP request from origin %r refused: not in MCP_ALLOWED_ORIGINS", origin)
        raise exceptions.PermissionDenied(
            f"Origin {origin!r} may not call this server (MCP_ALLOWED_ORIGINS)."
        )


def authenticate(request: Any) -> Caller:
    """The caller of a request, throttled. Raises DRF's AuthenticationFailed,
    NotAuthenticated or Throttled, NotFound for an environment it cannot see, Invalid for
    a header PostgreSQL could not hold or a call depth that is no number."""
    authenticated = BearerTokenAuthentication().authenticate(request)
    if authenticated is None:
        raise exceptions.NotAuthenticated()
    request.user, claims = authenticated
    for throttle in APIView.throttle_classes:  # the project's default throttles
        limiter = throttle()
        if not limiter.allow_request(request, APIView()):
            raise exceptions.Throttled(limiter.wait())
    header = request.META.get("HTTP_X_ENVIRONMENT")
    if header is not None:
        check_text(header, ("header", "X-Environment"))
    environment = environment_resolve(user=request.user, claim=claims.environment_id, header=header)
    depth = call_depth_of(request.headers)
    return Caller(request.user, environment, depth, scopes=claims.scopes)


def challenge(request: ASGIRequest) -> str:
    """The 401's `WWW-Authenticate`: the API's Bearer challenge, with where an OAuth
    client finds this resource's metadata (RFC 9728 section 5.1; the MCP authorization
    specification has clients start there)."""
    return bearer_challenge(request)


async def refuse(exc: Exception, send: Send, request: ASGIRequest | None = None) -> None:
    """The REST API's answer to `exc` (status, body, headers), sent as it would be."""
    response = exception_handler(exc, {})
    assert response is not None  # every exception refused here has an answer
    if isinstance(exc, exceptions.MethodNotAllowed):
        response["Allow"] = "POST"
    if response.status_code == 401 and request is not None:  # its Host was checked
        response["WWW-Authenticate"] = challenge(request)
    body = json.dumps(response.data).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(
            (name.lower().encode(), value.encode())
            for name, value in response.items()
            if name.lower() != "content-type"  # Django's default, for a body not rendered
        ),
    ]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """The request's body, read up to `limit` bytes (None past it, or when the client left),
    and a `receive` that hands the SDK what was read, then the rest of the exchange (the
    disconnect it listens for while it answers)."""
    read: list[Message] = []
    size = 0
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > limit or not message.get("more_body", False):
            break
    complete = read[-1]["type"] == "http.request" and size <= limit
    body = b"".join(m.get("body", b"") for m in read) if complete else None
    if body is not None:  # one message, rather than the many a large body came in
        read = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return read.pop(0) if read else await receive()

    return body, replay


# The body's JSON, or this when it does not parse or is too large: left to the SDK to answer.
UNREAD = object()


def parsed(body: bytes | None) -> object:
    if body is None:
        return UNREAD
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return UNREAD


def envelope_refusal(message: object) -> Refusal | None:
    """agents.protocols.mcp_server.envelope's refusal of the parsed body, if any."""
    return None if message is UNREAD else refusal(message)


def scope_needed(message: object) -> str:
    """The OAuth scope the message needs (agents.access.oauth.resources): a batch, the most
    any of its calls needs."""
    calls = message if isinstance(message, list) else [message]
    methods = [call.get("method") if isinstance(call, dict) else None for call in calls]
    needed = {mcp_scope_needed(method) for method in methods}
    return INVOKE if INVOKE in needed else READ


def meta_traceparent(message: object) -> object:
    """The message's `params._meta.traceparent` (the MCP semantic conventions' place for
    the caller's span), if any."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("traceparent") if isinstance(meta, dict) else None


def starts_run(message: object) -> bool:
    return isinstance(message, dict) and message.get("method") == "tools/call"


async def tokens_left(caller: Caller) -> None:
    """A call that would start a run is refused as the throttles refuse, a 429 before the
    session sees it, while the caller's tokensPerMinute is spent; no work without one (the
    limits came with the user). Raises RateLimited."""
    limits = caller_limits(caller.user)
    if limits is not None and limits.tokens_per_minute is not None:
        await in_db(tokens_admit)(limits)


def cancel_params(message: object) -> object | None:
    """The params of a `notifications/cancelled` (parsed); None for any other body."""
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return None
    if "id" in message:  # a request, not a notification: the SDK refuses it
        return None
    return message.get("params")


async def refuse_message(found: Refusal, send: Send) -> None:
    """A JSON-RPC error, as the SDK answers one before it dispatches: 400, JSON."""
    body = json.dumps(found.body(), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass
class _Running:
    """A session manager whose task group runs in a task of its own, for as long as the
    event loop does (or until it fails)."""

    manager: StreamableHTTPSessionManager
    started: asyncio.Event
    task: asyncio.Task[None]

    @classmethod
    def start(cls, manager: StreamableHTTPSessionManager) -> _Running:
        started = asyncio.Event()

        async def run() -> None:
            try:
                async with manager.run():
                    started.set()
                    await asyncio.Event().wait()  # until the loop ends and cancels it
            finally:
                started.set()  # a manager that failed to start must not hang requests

        # An empty context: the manager outlives the request that happened to start it.
        task = asyncio.get_running_loop().create_task(run(), context=contextvars.Context())
        return cls(manager, started, task)


class McpEndpoint:
    """The ASGI app at /v1/mcp."""

    def __init__(self, mcp_server: Server[Any]) -> None:
        self.server = mcp_server
        self._running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Running] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        liveness.ensure_started()  # Django's request_started never fires for this path
        manager = await self._manager()
        # The request's sync work on one thread of its own, as Django's handler does it
        # (unless an outer context, agentbuilder.request_threads, chose one already):
        # without one, every MCP call in the process would queue on a single thread.
        request = request_of(scope)
        # Every answer's `traceparent`, as on Django's routes (its middleware never sees
        # this endpoint's requests).
        trace = AsgiTrace(request.headers.get(HEADER))
        send = trace.answering(send)
        try:
            check_host_and_origin(request)
        except (DisallowedHost, exceptions.APIException) as exc:
            await refuse(exc, send)
            return
        async with ThreadSensitiveContext():
            try:
                caller = await in_db(authenticate)(request)
            except (exceptions.APIException, DomainError, Invalid) as exc:
                await refuse(exc, send, request)
                return
            if scope["method"] != "POST":
                # Stateless: the server never speaks first, so it offers no GET stream
                # (the specification's 405), and there is no session to DELETE.
                await refuse(exceptions.MethodNotAllowed(scope["method"]), send)
                return
            body, receive = await read_body(receive, max_body_bytes(PATH))
            message = parsed(body)
            trace.carried(meta_traceparent(message))
            found = envelope_refusal(message)
            if found is not None:
                await refuse_message(found, send)
                return
            needed = scope_needed(message)
            if caller.scopes is not None and needed not in caller.scopes:
                await refuse(InsufficientScope(request, needed), send, request)
                return
            if starts_run(message):
                try:
                    await tokens_left(caller)
                except RateLimited as exc:
                    await refuse(exc, send, request)
                    return
            cancel = cancel_params(message)
            if cancel is not None:  # then the SDK acknowledges it, as any notification
                await in_db(cancel_requested)(caller, cancel)
            handlers: set[asyncio.Task[Any]] = set()
            scope = {**scope, CALLER_KEY: caller, HANDLERS_KEY: handlers, TRACE_KEY: trace.trace}
            await manager.handle_request(scope, receive, send)
            pending = {task for task in handlers if not task.done()}
            if pending:  # the client left; its handlers are recording their runs
                await asyncio.wait(pending)

    async def _manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        running = self._running.get(loop)
        if running is None or running.task.done():  # no await since: one per loop
            manager = StreamableHTTPSessionManager(
                self.server, stateless=True, max_request_body_size=max_body_bytes(PATH)
            )
            running = self._running[loop] = _Running.start(manager)
        await running.started.wait()
        if running.task.done():
            raise RuntimeError("the MCP session manager did not start") from (
                running.task.exception()
            )
        return running.manager


endpoint = McpEndpoint(server)
