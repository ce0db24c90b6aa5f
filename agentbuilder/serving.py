"""How uvicorn speaks HTTP for the platform (`--http agentbuilder.serving:HttpToolsProtocol`,
in the Makefile and, through agentbuilder.gunicorn_worker, in the image): uvicorn's
httptools protocol, with one change to its graceful shutdown (docs/api.md#shutdown).
`HTTPProtocol` is uvicorn's h11 one with the same change, which `make run` used before
httptools measured cheaper (bench/peers.py --stack measures the two).

On SIGTERM uvicorn stops accepting and closes every connection that has no request in
flight. A connection it accepted a moment before, whose request has not been read yet, is
one of those: its client, which did nothing wrong, gets the connection closed with no
answer (when servers share a port and restart in turn, a few calls in a hundred). Go's
net/http met the same race and gives such a connection a few seconds to send its first
request (golang/go#22682); so does this. A connection that has served a request and waits
idle is closed at once, as HTTP lets a server do (RFC 9112 section 9.6) and clients expect.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as HttpToolsProtocolBase

# How long a connection accepted before the shutdown may take to send its first request.
# Go waits 5 s; a client that connected and sends nothing for that long is not coming.
FIRST_REQUEST_SECONDS = 5.0


class _FirstRequestGrace:
    """The shutdown change, for either of uvicorn's protocols: `_request_came` is called
    once the protocol has parsed a request's head (and made its cycle)."""

    _stopping = False
    _give_up: asyncio.TimerHandle | None = None
    cycle: Any
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def shutdown(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            # Accepted, no request yet: wait for it (and serve it, then close) for a while.
            self._stopping = True
            self._give_up = self.loop.call_later(FIRST_REQUEST_SECONDS, super().shutdown)  # type: ignore[misc]
            return
        super().shutdown()  # type: ignore[misc]

    def _request_came(self) -> None:
        if self._stopping and self.cycle is not None and self._give_up is not None:
            # The request came: it is served, and the connection closed after its response.
            self._give_up.cancel()
            self._give_up = None
            super().shutdown()  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._give_up is not None:
            self._give_up.cancel()
            self._give_up = None
        super().connection_lost(exc)  # type: ignore[misc]


class HTTPProtocol(_FirstRequestGrace, H11Protocol):
    def handle_events(self) -> None:
        super().handle_events()
        self._request_came()


class HttpToolsProtocol(_FirstRequestGrace, HttpToolsProtocolBase):
    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._request_came()
