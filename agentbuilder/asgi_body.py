"""Request bodies on the ASGI path, before Django sees them.

A chunked body (Transfer-Encoding: chunked, no Content-Length) is read here, up to the
route's limit, and handed on with the Content-Length it turned out to have: DRF reads no
body without one, so such a request used to look empty. Django itself spools every body to
a file before any middleware can refuse it, so a body over the limit, declared or chunked,
is refused here with 413 before the rest of it is read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agentbuilder.api.middleware import max_body_bytes

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Any, Any, Any], Awaitable[None]]  # Django's handler types its own arguments


class BodyLength:
    """ASGI middleware: every HTTP request reaches the app with a Content-Length."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = max_body_bytes(scope["path"])
        declared = _header(scope, b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > limit:
                await _too_large(send, limit)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before its body ended: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(_with_length(scope, size), _replay(b"".join(chunks), receive), send)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value).decode("latin-1").strip()
    return None


def _with_length(scope: Scope, size: int) -> Scope:
    if size == 0 and _header(scope, b"transfer-encoding") is None:
        return scope  # a request without a body (a GET) stays as it came
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"transfer-encoding"]
    return {**scope, "headers": [*headers, (b"content-length", str(size).encode())]}


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the client's own messages (Django listens on them
    for a disconnect while it answers)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"Request body is larger than {limit} bytes."}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
