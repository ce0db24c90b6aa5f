"""An OpenAI-compatible model server for many concurrent streams, on asyncio.

tests/fakes' FakeOpenAI serves each connection from a thread behind a listen backlog of 5:
with hundreds of clients connecting at once some are reset, and its threads slow each
other's pauses down. This one speaks the same wire format (`POST /v1/chat/completions`,
`stream: true`, `data: {chunk}` … `data: [DONE]` with `include_usage`) to any number of
clients. Every answer is the same text, so a client can check order and loss: numbered
deltas (`<00>` … `<49>`), or with `--prose` the 2,000 characters of English prose in
PROSE, one word a delta (with its leading space, as a model's tokens come). A call with
`stream: false` gets the same text as one `chat.completion` (JSON, at once).

    python bench/sse_fake.py [--deltas 50] [--pause 0.04] [--prose] [--record] [--stamp]

prints `port <n>` once listening, serves until SIGTERM, and answers `GET /stats` with the
number of calls and the peak of streams open at once (`GET /stats/reset`: the same, then
the peak starts again from the streams open now). With `--record` it keeps, for every
call in the order they came, the `time.monotonic()` at which it wrote each event (the role
chunk, the deltas, the finish chunk, the usage chunk, `[DONE]`), and answers them to
`GET /calls`: on one machine that clock is the same in every process. With `--stamp` each
delta's text ends with that clock as it was written (`<07>@0000012345.678901`), so a client
reading it, directly or through any relay, knows how long it took to reach it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import time
from typing import Any

# 2,000 characters, 21 sentences, nothing any shipped guardrail objects to.
PROSE = (
    "The old lighthouse at the end of the harbour has guided ships for more than a century. Its "
    "lamp was first lit by oil, then by gas, and finally by electricity in the spring of 1931. "
    "Each keeper wrote the weather, the passing vessels and the state of the lens into a thick "
    "logbook. Those books now sit in the town library, where anyone may read them on a quiet "
    "afternoon. They tell of calm summer nights, of winter gales that shook the tower, and of "
    "fog that lasted for days. One entry describes a fishing boat that lost its way and followed "
    "the beam safely home. Another records the arrival of a new lens, carried up the spiral "
    "stairs in seven careful pieces. The keepers were practical people who mended engines, "
    "painted railings and grew vegetables in the yard. Their children walked two miles along the "
    "coast road to reach the village school each morning. When the light was automated, the last "
    "keeper stayed on to show visitors around the tower. Today a small museum on the ground "
    "floor displays his tools, his charts and a brass telescope. Volunteers guide groups up the "
    "hundred and twelve steps to the gallery below the lamp. From there, on a clear day, you can "
    "see the islands to the north and the cliffs beyond the bay. Birdwatchers come in autumn to "
    "count the geese that rest on the marshes behind the dunes. In the evening, the beam still "
    "sweeps across the water every ten seconds, as it always has. The town celebrates the "
    "lighthouse with a festival of music, boats and lanterns every August. Families gather on "
    "the pier to watch the parade and to share bread, cheese and fresh fruit. Local bakers sell "
    "small cakes shaped like the tower, and the school choir sings old sea songs. At dusk the "
    "harbour master switches on a string of lamps along the breakwater. Sailors in the bay "
    "answer with their horns, and the crowd cheers each one in turn. Later, when the square is "
    "quiet again, the beam keeps turning over the dark and patient sea, and the whole town "
    "sleeps soundly under its steady ray."
)


def prose_deltas() -> list[str]:
    """PROSE one word a delta: "The", " old", " lighthouse", …, " ray."."""
    return re.findall(r" ?\S+", PROSE)


def delta_text(number: int) -> str:
    return f"<{number:02d}>"


def expected_text(deltas: int) -> str:
    return "".join(delta_text(n) for n in range(deltas))


# A delta's stamp, written in when the delta is sent: the same width, so the chunk's length
# (written before it) stays right.
STAMP = "@" + "~" * 17


def stamp_now() -> bytes:
    return f"@{time.monotonic():017.6f}".encode()


def sse(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    payload = f"data: {text}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Fake:
    def __init__(
        self, deltas: int | list[str], pause: float, record: bool = False, stamp: bool = False
    ) -> None:
        # A count of numbered deltas, or the delta texts themselves.
        self.texts = deltas if isinstance(deltas, list) else [delta_text(n) for n in range(deltas)]
        self.deltas = len(self.texts)
        self.pause = pause
        self.calls = 0
        self.open = 0
        self.peak = 0
        self.record = record
        self.sent: list[list[float]] = []  # with `record`: each call's write times
        self.stamp = stamp

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
            *(chunk({"content": text + (STAMP if self.stamp else "")}) for text in self.texts),
            chunk({}, "stop"),
            sse({**base, "choices": [], "usage": usage}),
            sse("[DONE]"),
        ]

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """The whole answer at once, for `stream: false`: the deltas' text in one message."""
        usage = {"prompt_tokens": 11, "completion_tokens": self.deltas}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        message = {"role": "assistant", "content": "".join(self.texts), "refusal": None}
        return {
            "id": f"chatcmpl-bench-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
            ],
            "usage": usage,
        }

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
        if method == "GET" and target in ("/stats", "/stats/reset"):
            _send_json(writer, 200, {"calls": self.calls, "peakStreams": self.peak})
            if target == "/stats/reset":
                self.peak = self.open
            return
        if method == "GET" and target == "/calls":
            _send_json(writer, 200, {"calls": self.sent})
            return
        body = json.loads(raw) if raw else {}
        if method != "POST" or not target.endswith("/chat/completions"):
            _send_json(writer, 400, {"error": {"message": "chat completions only"}})
            return
        if not body.get("stream"):
            self.calls += 1
            _send_json(writer, 200, self.completion(body))
            return
        self.calls += 1
        self.open += 1
        self.peak = max(self.peak, self.open)
        sent: list[float] = []
        if self.record:
            self.sent.append(sent)
        try:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nx-request-id: bench\r\n\r\n"
            )
            for number, event in enumerate(self.events(body)):
                if number:
                    await asyncio.sleep(self.pause)
                if self.record:
                    sent.append(time.monotonic())
                if self.stamp:
                    event = event.replace(STAMP.encode(), stamp_now())
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
    parser.add_argument(
        "--prose", action="store_true", help="answer PROSE, one word a delta (--deltas ignored)"
    )
    parser.add_argument(
        "--record", action="store_true", help="keep each call's write times for GET /calls"
    )
    parser.add_argument(
        "--stamp", action="store_true", help="end each delta with the clock it was sent at"
    )
    args = parser.parse_args()
    deltas = prose_deltas() if args.prose else args.deltas
    fake = Fake(deltas, args.pause, args.record, args.stamp)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0, backlog=4096)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
