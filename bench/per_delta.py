"""What each streamed delta costs the platform, against a bare relay, in one run (issue 35.3).

    .venv/bin/python bench/per_delta.py [--quick] [--db shared|private]

A streamed `/v1/openai` completion (bench/common.py's one-tool agent, whose model answers
with text) whose model answers in 50 deltas costs the server more
CPU than one whose model answers the same call in 1: the difference over 49 is what one
delta costs, from the provider's socket to the client's. A bare relay pays for the same
deltas what any server must (reading the upstream's HTTP body, writing the client's): a
uvicorn process serving only an ASGI app (this file, `--relay`) that forwards each of the
upstream's events as it reads it, parsing none. The platform's own work per delta is the
difference of the two slopes; the issue's goal is at most 0.1 ms.

Four server processes, all on loopback: the platform twice and the relay twice, one of each
against a bench/sse_fake.py upstream answering 50 numbered deltas with no pause, the other
against one answering 1 (OPENAI_BASE_URL is per process). Rounds alternate the four (the
order reversed every other round); each a block of streamed requests at concurrency 16.
Every answer is checked (status, the delta texts in order, `[DONE]`). Prints CPU per request
for each, the slopes per delta and their ratio; asserts nothing about time; exits 1 when an
answer is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    ONE_TOOL_CONFIG,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    start_sse_fake,
    stop_process,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

MANY = 50
CONCURRENCY = 16
REQUEST_TEXT = "Say something in many small pieces."


# ---------------------------------------------------------------- the relay


def relay_app(upstream: str) -> Any:
    """An ASGI app that POSTs the request's body to `upstream`'s chat completions and sends
    back each chunk of its streamed answer as it comes, untouched: the least a relay does."""
    client: httpx.AsyncClient | None = None

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal client
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if client is None:
            client = httpx.AsyncClient(timeout=60)
        async with client.stream(
            "POST",
            f"{upstream}/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        ) as response:
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def serve_relay(port: int, upstream: str) -> None:
    import uvicorn

    app = relay_app(upstream)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


class Relay(Server):
    """This file with `--relay`, a uvicorn process like the platform's."""

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream

    def start(self, timeout: float = 30.0) -> None:
        command = [sys.executable, __file__, "--relay", str(self.port), self.upstream]
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            command, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/", timeout=1)
            except httpx.TransportError:
                time.sleep(0.1)
                continue
            except httpx.HTTPError:
                pass
            return
        raise RuntimeError(f"the relay did not answer within {timeout} s:\n{self.tail()}")


# ---------------------------------------------------------------- load


@dataclass
class Block:
    requests: int = 0
    cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)

    def add(self, other: Block) -> None:
        self.requests += other.requests
        self.cpu += other.cpu
        self.latencies += other.latencies
        self.statuses += other.statuses
        self.wrong += other.wrong

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.requests * 1000 if self.requests else 0.0


def deltas_of(body: bytes) -> tuple[list[str], bool]:
    """The content deltas of an SSE chat completions body, and whether it ended in [DONE]."""
    texts: list[str] = []
    done = False
    for line in body.split(b"\n"):
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        for choice in chunk.get("choices") or ():
            if text := (choice.get("delta") or {}).get("content"):
                texts.append(text)
    return texts, done


@dataclass(frozen=True)
class Side:
    name: str
    server: Server
    deltas: int
    url: str
    body: dict[str, Any]
    headers: dict[str, str]


async def block(client: httpx.AsyncClient, side: Side, total: int) -> Block:
    result = Block(requests=total)
    numbers = iter(range(total))
    expected = "".join(f"<{n:02d}>" for n in range(side.deltas))

    async def worker() -> None:
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(side.url, json=side.body, headers=side.headers)
            except httpx.HTTPError as exc:
                result.statuses[0] += 1
                result.wrong.append(repr(exc))
                continue
            result.latencies.append(time.perf_counter() - started)
            result.statuses[response.status_code] += 1
            texts, done = deltas_of(response.content)
            if response.status_code != 200 or "".join(texts) != expected or not done:
                got = "".join(texts)
                result.wrong.append(f"{side.name}: {response.status_code} got {got[:120]!r}")

    cpu = cpu_seconds(side.server.pid)
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    result.cpu = cpu_seconds(side.server.pid) - cpu
    return result


async def measure(
    sides: list[Side], rounds: int, total: int, warmup: int, profile: str | None
) -> dict[str, Block]:
    limits = httpx.Limits(max_connections=CONCURRENCY * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        for side in sides:
            await block(client, side, warmup)
        blocks: dict[str, list[Block]] = {side.name: [] for side in sides}
        for number in range(rounds):
            for side in sides if number % 2 == 0 else reversed(sides):
                first = number == 0 and side.name == f"platform-{MANY}"
                spy = _spy(side, profile) if first else None
                blocks[side.name].append(await block(client, side, total))
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait()
    totals = {}
    for name, parts in blocks.items():
        whole = Block()
        for part in parts:
            whole.add(part)
        totals[name] = whole
        rounds_cpu = [part.cpu_ms for part in parts]
        print(f"{name}: CPU ms/request by round {', '.join(f'{c:.2f}' for c in rounds_cpu)}")
    return totals


def _spy(side: Side, profile: str | None) -> subprocess.Popen[bytes] | None:
    """With --profile: py-spy samples the 50-delta platform server over its first block,
    as collapsed stacks (flamegraph.pl's input: one stack a line, then its count)."""
    if profile is None:
        return None
    spy_program = str(Path(sys.executable).with_name("py-spy"))
    command = [spy_program, "record", "--pid", str(side.server.pid), "--rate", "200"]
    command += ["--nonblocking", "--format", "raw", "--output", profile]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
    time.sleep(1)  # py-spy attaches before the block starts
    return spy


# ---------------------------------------------------------------- main


def report(totals: dict[str, Block]) -> int:
    rows = []
    for name, whole in totals.items():
        ms = sorted(whole.latencies)
        rows.append(
            [
                name,
                whole.requests,
                f"{whole.cpu_ms:.3f}",
                f"{percentile(ms, 50) * 1000:.1f}",
                f"{percentile(ms, 99) * 1000:.1f}",
                dict(whole.statuses),
            ]
        )
    print(table(["server", "requests", "CPU ms/req", "p50 ms", "p99 ms", "statuses"], rows))
    ours = (totals[f"platform-{MANY}"].cpu_ms - totals["platform-1"].cpu_ms) / (MANY - 1)
    relay = (totals[f"relay-{MANY}"].cpu_ms - totals["relay-1"].cpu_ms) / (MANY - 1)
    print(f"\nper delta, platform: {ours * 1000:.1f} µs CPU; bare relay: {relay * 1000:.1f} µs")
    print(
        f"the platform's own work per delta: {(ours - relay) * 1000:.1f} µs "
        f"(goal <= 100 µs); platform/relay per delta: {ours / relay if relay else 0:.2f}"
    )
    wrong = [w for whole in totals.values() for w in whole.wrong]
    for line in Counter(wrong).most_common(5):
        print("wrong answer:", line)
    print(f"every answer 200 with every delta in order: {'yes' if not wrong else 'NO'}")
    return 1 if wrong else 0


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--relay":
        serve_relay(int(sys.argv[2]), sys.argv[3])
        return 0
    parser: argparse.ArgumentParser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--profile", metavar="FILE", help="py-spy's collapsed stacks of a block")
    args = parser.parse_args()
    rounds, total, warmup = (4, 200, 50) if args.quick else (8, 600, 100)
    print(machine())
    db = prepare(args.db)
    fakes = []
    try:
        data = bench_data(callers=1, config=ONE_TOOL_CONFIG)
        from agents.models import Agent

        name = Agent.objects.get(pk=data.agent_id).name
        many, many_url = start_sse_fake("--deltas", str(MANY), "--pause", "0")
        one, one_url = start_sse_fake("--deltas", "1", "--pause", "0")
        fakes = [many, one]
        common = {
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "LLM_OFFLINE": "false",
            "OPENAI_API_KEY": "bench-key",
        }
        body = {
            "model": name,
            "stream": True,
            "messages": [{"role": "user", "content": REQUEST_TEXT}],
        }
        auth = {"Authorization": f"Bearer {data.tokens[0]}"}
        servers = {
            f"platform-{MANY}": Server({**common, "OPENAI_BASE_URL": f"{many_url}/v1"}),
            "platform-1": Server({**common, "OPENAI_BASE_URL": f"{one_url}/v1"}),
            f"relay-{MANY}": Relay(many_url),
            "relay-1": Relay(one_url),
        }
        for server in servers.values():
            server.start(timeout=300)  # a loaded machine starts Django slowly
        try:
            sides = [
                Side(
                    name,
                    server,
                    MANY if name.endswith(f"-{MANY}") else 1,
                    f"{server.url}/v1/openai/chat/completions"
                    if name.startswith("platform")
                    else f"{server.url}/",
                    {**body, "model": "gpt-4o-mini"} if name.startswith("relay") else body,
                    auth if name.startswith("platform") else {},
                )
                for name, server in servers.items()
            ]
            print(
                f"{rounds} rounds x {total} streamed requests a server (after {warmup} "
                f"warm-up), concurrency {CONCURRENCY}, load average {os.getloadavg()[0]:.1f}"
            )
            totals = asyncio.run(measure(sides, rounds, total, warmup, args.profile))
        finally:
            for server in servers.values():
                server.close()
    finally:
        for fake in fakes:
            stop_process(fake)
        db.close()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return report(totals)


if __name__ == "__main__":
    raise SystemExit(main())
