"""A webhook receiver for tests: a tiny HTTP server on 127.0.0.1 that keeps every request
and answers the statuses it was told (then 200); it can be stopped (its port closed) and
started again on the same port. And the fixtures the webhook tests share."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from standardwebhooks import Webhook

from agents.models import WebhookDelivery
from agents.webhooks.delivery import deliveries_send_due


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes

    def verified(self, secret: str) -> Any:
        """The payload, if its signature verifies with `secret` (raises otherwise)."""
        return Webhook(secret).verify(self.body, self.headers)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Receiver:
    def __init__(self, statuses: tuple[int, ...] = (), port: int | None = None) -> None:
        self.port = port or free_port()
        self.statuses = list(statuses)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append(Received(dict(self.headers.items()), body))
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"try again later")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    up = Receiver().start()
    yield up
    up.stop()


@pytest.fixture
def webhooks_on_loopback(settings: Any) -> None:
    """The receivers listen on 127.0.0.1, which the address guard refuses unless allowed;
    retries wait a few milliseconds."""
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.WEBHOOK_BACKOFF_SECONDS = 0.01
    settings.WEBHOOK_BACKOFF_MAX_SECONDS = 0.05


def deliver_all(passes: int = 500) -> int:
    """Run delivery passes until nothing is pending; how many passes it took. A bound on
    passes, not on time, so a broken retry fails the test rather than hanging it."""
    for n in range(1, passes + 1):
        attempted = deliveries_send_due()
        if not WebhookDelivery.objects.filter(status="pending").exists():
            return n
        if not attempted:  # the next attempt waits out its backoff (milliseconds here)
            time.sleep(0.01)
    raise AssertionError(f"deliveries still pending after {passes} passes")
