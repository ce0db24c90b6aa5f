"""What the fake model servers share: the script a test writes, and the HTTP plumbing.

A test queues responses on a fake (`fake.script(Turn(...), Fail(429), Turn(...))`); each
request takes the next one (or `fake.fallback` when the queue is empty). A model can be made
to fail whatever the queue holds (`fake.fail_model("gpt-4o-mini", Fail(503))`): its every
request, retries included, gets that answer and takes nothing from the queue. The fake records
every request (`fake.requests`, `fake.bodies`) and sets `fake.disconnected` when a client
goes away before its response is complete.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class Call:
    """A tool call; its arguments (JSON text) are sent in `pieces` fragments."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    pieces: int = 3

    def text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def fragments(self) -> list[str]:
        text = self.text()
        size = max(1, -(-len(text) // max(1, self.pieces)))
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True)
class Turn:
    """One successful answer, streamed.

    text: the text deltas, in order; calls: tool calls after the text;
    stop: the wire stop reason (default: tool use when there are calls, else end of turn);
    usage: (input tokens, output tokens); cached: how many of the input tokens the provider
    read from its prompt cache (each fake reports them as its wire format does);
    delay: seconds before the response starts; pause: seconds between events;
    hang: seconds to hold the stream open after the content, before it ends (a whole,
    unstreamed answer comes when its stream would have ended: `hold_whole`);
    error_after: after this many events, send the protocol's mid-stream error instead;
    cut_after: after this many events, drop the connection;
    gate: a semaphore the fake takes before each event after the first, so a test lets
    the answer go on as far as its own work has come (counted, not timed).
    """

    text: tuple[str, ...] | list[str] = ()
    calls: tuple[Call, ...] | list[Call] = ()
    stop: str | None = None
    usage: tuple[int, int] = (11, 7)
    cached: int = 0
    delay: float = 0.0
    pause: float = 0.0
    hang: float = 0.0
    error_after: int | None = None
    cut_after: int | None = None
    gate: threading.Semaphore | None = None


@dataclass(frozen=True)
class Fail:
    """An HTTP error answer. `code` is the protocol's error type (a default per status);
    `retry_after_ms` sets the server's retry hint header."""

    status: int
    message: str = "The fake server was told to fail"
    code: str | None = None
    delay: float = 0.0
    retry_after_ms: int | None = None


Script = Turn | Fail


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client: tuple[str, int] = ("", 0)  # the client's address and port: one per connection


class ClientGone(Exception):
    """The client closed the connection while the fake was answering."""


class FakeServer:
    """An HTTP server on 127.0.0.1, on a free port, served from a background thread."""

    handler: ClassVar[type[FakeHandler]]

    def __init__(self) -> None:
        self.queue: deque[Script] = deque()
        self.fallback: Script | None = None
        self.failing: dict[str, Fail] = {}  # model id, as the wire names it: its answer
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        self.ids = itertools.count(1)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self.handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def call_id(self, call: Call, prefix: str) -> str:
        return call.id or f"{prefix}{next(self.ids)}"

    def script(self, *responses: Script) -> None:
        self.queue.extend(responses)

    def fail_model(self, model: str, fail: Fail) -> None:
        """Answer every request for `model` (its id on the wire) with `fail`."""
        self.failing[model] = fail

    def model_of(self, recorded: Recorded) -> str | None:
        """The model a request asks for, as its wire format names it."""
        return None

    def reset(self) -> None:
        """Forget the script and the record, so one server can serve many tests."""
        with self._lock:
            self.queue.clear()
            self.fallback = None
            self.failing.clear()
            self.requests.clear()
            self.disconnected.clear()

    def next_response(self, recorded: Recorded) -> Script | None:
        with self._lock:
            self.requests.append(recorded)
            failing = self.failing.get(self.model_of(recorded) or "")
            if failing is not None:
                return failing
            return self.queue.popleft() if self.queue else self.fallback

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's backlog of 5 refuses a burst of clients (runs calling the model at once).
    request_queue_size = 128
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping a kept-alive connection between requests is not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with chunked streaming and a watch on the client's side of the socket."""

    protocol_version = "HTTP/1.1"
    server: _Server

    @property
    def fake(self) -> FakeServer:
        return self.server.fake

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        host, port = self.client_address[:2]
        recorded = Recorded("POST", self.path, dict(self.headers.items()), body, (host, port))
        response = self.fake.next_response(recorded)
        try:
            if response is None:
                self.send_json(500, {"message": "the fake has no scripted response left"})
            elif not self.wait(response.delay):
                raise ClientGone
            elif isinstance(response, Fail):
                self.fail(response)
            else:
                self.answer(recorded, response)
        except (ClientGone, ConnectionError):
            self.fake.disconnected.set()
            self.close_connection = True

    def answer(self, recorded: Recorded, turn: Turn) -> None:
        raise NotImplementedError

    def fail(self, fail: Fail) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ plumbing

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """Drop the connection in the middle of the body."""
        self.close_connection = True
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)

    def stream_events(self, events: list[bytes], turn: Turn, error: bytes, end: int) -> None:
        """Send `events`, honouring the turn's pause, hang, error and cut; `end` is where
        the content stops and the closing events (stop, usage) begin."""
        for number, event in enumerate(events):
            if number == end and not self.wait(turn.hang):
                raise ClientGone
            if number == turn.cut_after:
                self.cut()
                return
            if number == turn.error_after:
                self.send_chunk(error)
                self.end_stream()
                return
            if number and not self.wait(turn.pause):
                raise ClientGone
            if number and turn.gate is not None and not self.take(turn.gate):
                raise ClientGone
            self.send_chunk(event)
        self.end_stream()

    def hold_whole(self, turn: Turn) -> None:
        """Before a whole (unstreamed) answer: it comes when its stream would have ended,
        after the pauses between its deltas, the gate (once) and the hang."""
        if not self.wait(turn.pause * max(len(turn.text) - 1, 0)):
            raise ClientGone
        if turn.gate is not None and not self.take(turn.gate):
            raise ClientGone
        if not self.wait(turn.hang):
            raise ClientGone

    def wait(self, seconds: float) -> bool:
        """Sleep, watching the socket: False as soon as the client has closed it."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0 and not self.fake.stopping.is_set():
            step = min(remaining, 0.05)
            readable, _, _ = select.select([self.connection], [], [], step)
            if readable:
                if self._client_closed():
                    return False
                time.sleep(step)  # bytes from the client, not its end: keep waiting
        return not self.fake.stopping.is_set()

    def take(self, gate: threading.Semaphore) -> bool:
        """Wait for the gate, watching the socket: False as soon as the client has closed
        it (or the fake stops)."""
        while not gate.acquire(timeout=0.05):
            if not self.wait(0.0) or self._client_closed_now():
                return False
        return True

    def _client_closed_now(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable) and self._client_closed()

    def _client_closed(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
