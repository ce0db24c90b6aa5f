"""Many invoke-stream calls at once against a slow streaming model, on one uvicorn process,
next to a bare relay of the same model stream on the same server.

    .venv/bin/python bench/stream_concurrency.py [--quick] [--streams N] [--db private|shared]

N concurrent POST .../versions/latest/invoke-stream (default 500; --quick: 100) of a
one-tool agent whose model (bench/sse_fake.py, OpenAI's wire format, in its own process)
streams 50 numbered deltas 40 ms apart; in the same run and from the same client, N
concurrent POST /bench/relay (bench/urls.py: an async view that opens the same upstream
stream with one shared httpx client and writes each delta as an NDJSON line; no auth, no
database). Checks that every stream of both completes with every delta, in order; prints
completion times, the server's CPU per stream, peak RSS and threads, the peak number of
PostgreSQL connections to the bench database (the goal: below 20) and a timeline for each,
then a table of both and, last, one line for scripts: `streams: platform p99 <s> s, relay
p99 <s> s, platform CPU/stream <ms> ms, relay CPU/stream <ms> ms`.

Asserts nothing about time.

It runs on a throwaway embedded server by default: at these concurrencies the platform
opens a connection per request in flight, which would take every connection slot of the
shared server from whatever else uses it (tests, `make run`).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from common import (
    Database,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    run_counts,
    running,
    start_sse_fake,
    stop_process,
    table,
)
from sse_fake import delta_text, expected_text

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx
import psutil

DELTAS = 50
PAUSE = 0.04
CONNECTION_GOAL = 20
SAMPLE_EVERY = 0.05
TIMELINE_EVERY = 0.5
REQUEST = {"messages": [{"role": "user", "content": "Count for the benchmark."}]}


@dataclass
class Stream:
    started: float
    first_byte: float = 0.0
    finished: float = 0.0
    status: int = 0
    deltas: list[str] = field(default_factory=list)
    last_type: str = ""
    error: str = ""

    @property
    def seconds(self) -> float:
        return self.finished - self.started


async def one_stream(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> Stream:
    stream = Stream(started=time.perf_counter())
    try:
        async with client.stream("POST", url, json=REQUEST, headers=headers) as response:
            stream.status = response.status_code
            if response.status_code != 200:
                stream.error = (await response.aread()).decode(errors="replace")[:300]
            else:
                async for line in response.aiter_lines():
                    stream.first_byte = stream.first_byte or time.perf_counter()
                    if line:
                        event = json.loads(line)
                        stream.last_type = event["type"]
                        if event["type"] == "response.output_text.delta":
                            stream.deltas.append(event["delta"])
    except httpx.HTTPError as exc:
        stream.error = repr(exc)
    stream.finished = time.perf_counter()
    return stream


@dataclass(frozen=True)
class Sample:
    at: float
    rss: int
    threads: int
    connections: int


class Sampler(threading.Thread):
    """Every 50 ms: the server's RSS and threads, and the bench database's connections."""

    def __init__(self, db: Database, pid: int) -> None:
        super().__init__(daemon=True)
        self.db = db
        self.process = psutil.Process(pid)
        self.samples: list[Sample] = []
        self.done = threading.Event()

    def run(self) -> None:
        # Connected to `postgres`, so this connection is not one of those it counts.
        with self.db.connect() as conn:
            query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
            while not self.done.is_set():
                at = time.perf_counter()
                connections = conn.execute(query, [self.db.name]).fetchone()[0]
                rss = self.process.memory_info().rss
                self.samples.append(Sample(at, rss, self.process.num_threads(), connections))
                self.done.wait(max(0.0, SAMPLE_EVERY - (time.perf_counter() - at)))

    def peak(self, name: str, since: float = 0.0, until: float = float("inf")) -> int:
        values = [getattr(s, name) for s in self.samples if since <= s.at <= until]
        return max(values, default=0)


@dataclass(frozen=True)
class Side:
    """One of the two routes the burst goes to: the platform's invoke-stream or the relay."""

    name: str
    path: str
    headers: list[dict[str, str]]  # one per caller, used in turn
    runs_recorded: bool  # the platform writes a run row per call; the relay writes nothing


@dataclass
class Burst:
    side: Side
    streams: list[Stream]
    sampler: Sampler
    cpu: dict[str, float]
    wall: float
    fake: dict[str, int]
    runs: dict[str, int] | None = None

    def answered(self) -> list[Stream]:
        return [s for s in self.streams if s.status == 200 and not s.error]

    def p99(self) -> float:
        return percentile([s.seconds for s in self.answered()], 99)

    def cpu_per_stream_ms(self) -> float:
        return self.cpu["server"] / len(self.streams) * 1000


async def warm_up(server: Server, side: Side) -> None:
    """One call first, so the burst does not pay for lazy imports (the provider's)."""
    async with httpx.AsyncClient(timeout=60) as client:
        stream = await one_stream(client, f"{server.url}{side.path}", side.headers[0])
    if stream.last_type != "response.completed":
        raise RuntimeError(f"{side.name}: the warm-up call failed: {stream.status} {stream.error}")


async def drive(server: Server, side: Side, count: int) -> list[Stream]:
    url = f"{server.url}{side.path}"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        return await asyncio.gather(
            *(one_stream(client, url, side.headers[i % len(side.headers)]) for i in range(count))
        )


def burst(db: Database, server: Server, fake: Any, fake_url: str, side: Side, count: int) -> Burst:
    """The warm-up call, then `count` streams at once, watched from outside."""
    asyncio.run(warm_up(server, side))
    # A line as each burst starts, with the server's pid: a profiler can attach to it then.
    print(f"{side.name}: {count} streams (server pid {server.pid})", flush=True)
    httpx.get(f"{fake_url}/stats/reset")  # the fake's peak, from here on
    sampler = Sampler(db, server.pid)
    sampler.start()
    try:
        time.sleep(0.2)
        before = {p: cpu_seconds(pid) for p, pid in (("server", server.pid), ("fake", fake.pid))}
        client_cpu, started = time.process_time(), time.perf_counter()
        streams = asyncio.run(drive(server, side, count))
        wall = time.perf_counter() - started
        used = {
            "server": cpu_seconds(server.pid) - before["server"],
            "model fake": cpu_seconds(fake.pid) - before["fake"],
            "client (this process)": time.process_time() - client_cpu,
        }
        time.sleep(0.5)  # each run is saved after its last byte
    finally:
        sampler.done.set()
        sampler.join()
    stats = httpx.get(f"{fake_url}/stats").json()
    return Burst(side, streams, sampler, used, wall, stats)


def timeline(streams: list[Stream], sampler: Sampler) -> None:
    start = min(s.started for s in streams)
    answering = sorted(s.first_byte for s in streams if s.first_byte)
    finished = sorted(s.finished for s in streams)
    print("\n  timeline (s since the first request; streams answering = first byte received)")
    print("      t  pg conns  RSS MiB  threads  answering  finished")
    last = -TIMELINE_EVERY
    for sample in sampler.samples:
        t = sample.at - start
        if t - last < TIMELINE_EVERY or t < -SAMPLE_EVERY:
            continue
        last = t
        began = sum(1 for x in answering if x <= sample.at)
        ended = sum(1 for x in finished if x <= sample.at)
        print(
            f"  {t:5.1f}  {sample.connections:8d}  {sample.rss / 2**20:7.0f}  "
            f"{sample.threads:7d}  {began:9d}  {ended:8d}"
        )


@dataclass(frozen=True)
class Check:
    exact: int
    lost: int
    reordered: int
    errors: int
    ok: bool


def check(b: Burst) -> Check:
    expected = expected_text(DELTAS)
    numbered = [delta_text(n) for n in range(DELTAS)]
    answered = b.answered()
    completed = [s for s in answered if s.last_type == "response.completed"]
    exact = [s for s in completed if s.deltas == numbered]
    lost = [s for s in answered if len(s.deltas) < DELTAS]
    reordered = [s for s in answered if len(s.deltas) == DELTAS and "".join(s.deltas) != expected]
    errors = len(b.streams) - len(answered)
    ok = len(exact) == len(b.streams)
    if b.side.runs_recorded:  # one completed run per call, the warm-up call's included
        ok = ok and (b.runs or {}).get("completed", 0) == len(b.streams) + 1
    return Check(len(exact), len(lost), len(reordered), errors, ok)


def report(b: Burst) -> bool:
    streams, sampler = b.streams, b.sampler
    count = len(streams)
    statuses = Counter(s.status for s in streams)
    errors = [s for s in streams if s.error]
    answered = b.answered()
    completed = [s for s in answered if s.last_type == "response.completed"]
    result = check(b)
    seconds = [s.seconds for s in answered]
    first = [s.first_byte - s.started for s in answered if s.first_byte]
    start = min(s.started for s in streams)

    print(
        f"\n{b.side.name}: {count} concurrent POST {b.side.path}, "
        f"{DELTAS} deltas {PAUSE * 1000:.0f} ms apart"
    )
    print(f"  HTTP statuses: {dict(statuses)}; failed calls: {len(errors)}")
    for reason, n in Counter(s.error[:160] for s in errors).most_common(3):
        print(f"    {n} x {reason}")
    print(
        f"  completed (response.completed): {len(completed)}/{count}; "
        f"deltas exact and in order: {result.exact}/{count}; "
        f"streams with lost deltas: {result.lost}; reordered: {result.reordered}"
    )
    model_alone = (DELTAS + 2) * PAUSE
    print(
        f"  completion s (answered calls): p50 {percentile(seconds, 50):.2f}  "
        f"p99 {percentile(seconds, 99):.2f}  max {max(seconds, default=0):.2f}  "
        f"(the model alone: {model_alone:.2f})"
    )
    print(f"  first byte s: p50 {percentile(first, 50):.2f}  p99 {percentile(first, 99):.2f}")
    print(f"  wall s: {max(s.finished for s in streams) - start:.2f}")
    print(
        f"  model calls seen by the fake (total so far): {b.fake['calls']}, "
        f"open at once at most during the burst: {b.fake['peakStreams']}"
    )
    idle = sampler.samples[0]
    print(
        f"  server peak RSS: {sampler.peak('rss') / 2**20:.0f} MiB (idle before: "
        f"{idle.rss / 2**20:.0f} MiB); peak threads: {sampler.peak('threads')} "
        f"(idle before: {idle.threads})"
    )
    print(
        "  CPU s during the burst: "
        + ", ".join(f"{name} {value:.1f}" for name, value in b.cpu.items())
        + f" (of {b.wall * (os.cpu_count() or 1):.1f} available); "
        f"server CPU per stream: {b.cpu_per_stream_ms():.1f} ms"
    )
    peak = sampler.peak("connections")
    print(
        f"  peak PostgreSQL connections to the bench database: {peak} "
        f"(goal < {CONNECTION_GOAL}: {'met' if peak < CONNECTION_GOAL else 'NOT met'}; "
        f"idle before: {idle.connections})"
    )
    if answered:
        # All answered streams open: after the last first byte, before the first one ended.
        since = max(s.first_byte for s in answered)
        until = min(s.finished for s in answered)
        during = sampler.peak("connections", since, until) if since < until else "no such moment"
        print(f"  peak connections while every answered stream was open: {during}")
    if b.side.runs_recorded:
        print(f"  runs recorded (the warm-up call's included): {b.runs}")
    timeline(streams, sampler)
    what = "every stream complete and exact" + (
        ", one completed run each" if b.side.runs_recorded else ""
    )
    print(f"\n{b.side.name}: {what}: {'yes' if result.ok else 'NO'}")
    return result.ok


def comparison(bursts: list[Burst]) -> None:
    headers = [
        "side",
        "streams",
        "errors",
        "exact",
        "lost",
        "reordered",
        "p50 s",
        "p99 s",
        "first byte p99 s",
        "wall s",
        "server CPU s",
        "CPU/stream ms",
        "peak threads",
        "peak PG conns",
        "peak RSS MiB",
    ]
    rows = []
    for b in bursts:
        c = check(b)
        seconds = [s.seconds for s in b.answered()]
        first = [s.first_byte - s.started for s in b.answered() if s.first_byte]
        start = min(s.started for s in b.streams)
        rows.append(
            [
                b.side.name,
                len(b.streams),
                c.errors,
                c.exact,
                c.lost,
                c.reordered,
                f"{percentile(seconds, 50):.2f}",
                f"{b.p99():.2f}",
                f"{percentile(first, 99):.2f}",
                f"{max(s.finished for s in b.streams) - start:.2f}",
                f"{b.cpu['server']:.1f}",
                f"{b.cpu_per_stream_ms():.1f}",
                b.sampler.peak("threads"),
                b.sampler.peak("connections"),
                f"{b.sampler.peak('rss') / 2**20:.0f}",
            ]
        )
    platform, relay = bursts
    print(
        "\nboth sides, the same server and client, the relay's burst then the platform's "
        f"(platform: POST {platform.side.path}; relay: POST {relay.side.path})"
    )
    print(table(headers, rows))
    print(
        f"platform / relay: p99 {ratio(platform.p99(), relay.p99()):.2f}x (goal <= 1.5x), "
        f"CPU per stream {ratio(platform.cpu['server'], relay.cpu['server']):.2f}x "
        "(goal <= 2x); "
        f"peak threads {platform.sampler.peak('threads')} (goal <= 50); "
        f"peak PG connections {platform.sampler.peak('connections')} (goal < {CONNECTION_GOAL})"
    )


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def summary(bursts: list[Burst]) -> str:
    platform, relay = bursts
    return (
        f"streams: platform p99 {platform.p99():.2f} s, relay p99 {relay.p99():.2f} s, "
        f"platform CPU/stream {platform.cpu_per_stream_ms():.1f} ms, "
        f"relay CPU/stream {relay.cpu_per_stream_ms():.1f} ms"
    )


def measure(db: Database, count: int) -> tuple[bool, list[Burst]]:
    data = bench_data(callers=16)
    fake, fake_url = start_sse_fake("--deltas", str(DELTAS), "--pause", str(PAUSE))
    platform = Side(
        "platform",
        f"/v1/agents/{data.agent_id}/versions/latest/invoke-stream",
        [{"Authorization": f"Bearer {token}"} for token in data.tokens],
        runs_recorded=True,
    )
    relay = Side("relay", "/bench/relay", [{}], runs_recorded=False)
    try:
        env = {
            "DJANGO_SETTINGS_MODULE": "bench.settings",  # bench/urls.py's /bench/relay
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": f"{fake_url}/v1",
            "OPENAI_API_KEY": "bench-key",
        }
        with running(Server(env)) as server:
            # The relay first: it opens no database connection, so the pool the platform
            # opens (and keeps) is not counted against it.
            relayed = burst(db, server, fake, fake_url, relay, count)
            served = burst(db, server, fake, fake_url, platform, count)
            problems = server.problem_summary()
    finally:
        stop_process(fake)
    served.runs = run_counts(data.agent_id)
    ok = report(relayed)
    ok = report(served) and ok
    if problems:
        print("server log (each line counted, tracebacks' frames left out):")
        for line in problems[:10]:
            print(f"  {line}")
    bursts = [served, relayed]
    comparison(bursts)
    return ok, bursts


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument(
        "--streams",
        type=int,
        default=None,
        help="concurrent streams on each side (default 500; --quick: 100)",
    )
    args = parser.parse_args()
    count = args.streams or (100 if args.quick else 500)
    print(machine())
    db = prepare(args.db)
    try:
        ok, bursts = measure(db, count)
    finally:
        db.close()
    print(f"\ndone; {machine()}")
    print(summary(bursts))  # the last line, for scripts
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
