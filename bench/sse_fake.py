"""An OpenAI-compatible model server for many concurrent streams, on asyncio.

tests/fakes' FakeOpenAI serves each connection from a thread behind a listen backlog of 5:
with hundreds of clients connecting at once some are reset, and its threads slow each
other's pauses down. This one speaks the same wire format (`POST /v1/chat/completions`,
`stream: true`, `data: {chunk}` … `data: [DONE]` with `include_usage`) to any number of
clients. Every answer is the same numbered text, so a client can check order and loss.

    python bench/sse_fake.py [--deltas 50] [--pause 0.04]

prints `port <n>` once listening, serves until SIGTERM, and answers `GET /stats` with the
number of calls and the peak of streams open at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from typing import Any


def delta_text(number: int) -> str:
    return f"<{number:02d}>"


def expected_text(deltas: int) -> str:
    return "".join(delta_text(n) for n in range(deltas))


def sse(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    payload = f"data: {text}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Fake:
    def __init__(self, deltas: int, pause: float) -> None:
        self.deltas = deltas
        self.pause = pause
        self.calls = 0
        self.open = 0
        self.peak = 0

    def events(self, body: dict[str, Any]) -> list[bytes]:
        base: dict[str, Any] = {
            "id": f"chatcmpl-bench-{self.calls}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": None,
            "usage": None,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**base, "choices": [choice]})

        usage = {"prompt_tokens": 11, "completion_tokens": self.deltas}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return [
            chunk({"role": "assistant", "content": ""}),
            *(chunk({"content": delta_text(n)}) for n in range(self.deltas)),
            chunk({}, "stop"),
            sse({**base, "choices": [], "usage": usage}),
            sse("[DONE]"),
        ]

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, target, headers = _head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                await self.answer(writer, method, target, body)
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            return  # shutting down: a kept-alive connection was waiting for a request
        finally:
            writer.close()

    async def answer(
        self, writer: asyncio.StreamWriter, method: str, target: str, raw: bytes
    ) -> None:
        if method == "GET" and target == "/stats":
            _send_json(writer, 200, {"calls": self.calls, "peakStreams": self.peak})
            return
        body = json.loads(raw) if raw else {}
        if method != "POST" or not target.endswith("/chat/completions") or not body.get("stream"):
            _send_json(writer, 400, {"error": {"message": "streamed chat completions only"}})
            return
        self.calls += 1
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nx-request-id: bench\r\n\r\n"
            )
            for number, event in enumerate(self.events(body)):
                if number:
                    await asyncio.sleep(self.pause)
                writer.write(event)
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            self.open -= 1


def _head(head: bytes) -> tuple[str, str, dict[str, str]]:
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _send_json(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    writer.write(
        b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (status, len(data), data)
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=50)
    parser.add_argument("--pause", type=float, default=0.04)
    args = parser.parse_args()
    fake = Fake(args.deltas, args.pause)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0, backlog=4096)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
