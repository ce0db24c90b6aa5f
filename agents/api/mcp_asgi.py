"""`/v1/mcp`: the MCP SDK's streamable HTTP transport in front of agents.api.mcp_server.

Before the SDK sees a request, the caller is read from the Bearer token and the request is
throttled, as on every /v1 route: the same authentication class, the same throttles, the
same environment rule, and their refusals in SPEC section 2's JSON (a 401 with its
`WWW-Authenticate` challenge). The caller then travels in the ASGI scope to the handlers.
The SDK's DNS-rebinding guard (Host and Origin lists) stays off: it protects servers that
trust whoever reaches them; this one trusts only a Bearer token, which a rebound page in
a browser does not have.

Stateless: every POST stands alone (no `Mcp-Session-Id`), so the web tier keeps no state
of its own and any worker of any host can answer any request, as DESIGN asks. Answers are
SSE, so progress notifications reach the client while the agent runs.

The SDK's session manager needs a running task group, which it normally gets from the ASGI
lifespan; our servers run with the lifespan off (`make run`), so each event loop starts
its own manager at its first MCP request, in a task of its own that lives as long as the
loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import weakref
from dataclasses import dataclass
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.http.request import HttpHeaders
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions
from rest_framework.views import APIView
from starlette.types import Receive, Scope, Send

from agentbuilder import liveness
from agentbuilder.api.errors import exception_handler
from agentbuilder.api.middleware import max_body_bytes
from agentbuilder.api.parsers import check_text
from agentbuilder.db import in_db
from agentbuilder.errors import DomainError, Invalid
from agents import selectors
from agents.api.authentication import BearerTokenAuthentication
from agents.api.mcp_server import CALLER_KEY, HANDLERS_KEY, server
from agents.protocols.mcp_server.request import Caller

PATH = "/v1/mcp"


class _HttpShim:
    """What DRF's authentication and throttle classes read of a request (`META`,
    `headers`, the user): enough to run the REST API's own classes here, unchanged."""

    def __init__(self, scope: Scope) -> None:
        self.META: dict[str, str] = {"REMOTE_ADDR": (scope.get("client") or ("", 0))[0]}
        for key, value in scope["headers"]:
            name = "HTTP_" + bytes(key).decode("latin-1").upper().replace("-", "_")
            self.META[name] = bytes(value).decode("latin-1")
        self.headers = HttpHeaders(self.META)
        self.user: Any = None


def authenticate(scope: Scope) -> Caller:
    """The caller of a request, throttled. Raises DRF's AuthenticationFailed,
    NotAuthenticated or Throttled, NotFound for an environment it cannot see, Invalid for
    a header PostgreSQL could not hold."""
    request: Any = _HttpShim(scope)
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
    environment = selectors.environment_resolve(
        user=request.user, claim=claims.environment_id, header=header
    )
    return Caller(request.user, environment)


async def refuse(exc: Exception, send: Send) -> None:
    """The REST API's answer to `exc` (status, body, headers), sent as it would be."""
    response = exception_handler(exc, {})
    assert response is not None  # every exception refused here has an answer
    if isinstance(exc, exceptions.MethodNotAllowed):
        response["Allow"] = "POST"
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
        async with ThreadSensitiveContext():
            try:
                caller = await in_db(authenticate)(scope)
            except (exceptions.APIException, DomainError, Invalid) as exc:
                await refuse(exc, send)
                return
            if scope["method"] != "POST":
                # Stateless: the server never speaks first, so it offers no GET stream
                # (the specification's 405), and there is no session to DELETE.
                await refuse(exceptions.MethodNotAllowed(scope["method"]), send)
                return
            handlers: set[asyncio.Task[Any]] = set()
            scope = {**scope, CALLER_KEY: caller, HANDLERS_KEY: handlers}
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


def is_mcp_path(path: str) -> bool:
    return path.rstrip("/") == PATH
