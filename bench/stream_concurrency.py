"""Many invoke-stream calls at once against a slow streaming model, on one uvicorn process.

    .venv/bin/python bench/stream_concurrency.py [--quick] [--db private|shared]

500 concurrent POST .../versions/latest/invoke-stream (--quick: 100) of a one-tool agent
whose model (bench/sse_fake.py, OpenAI's wire format, in its own process) streams 50
numbered deltas 40 ms apart. Checks that every stream completes with every delta, in
order; prints completion times, the server's peak RSS and threads, the peak number of
PostgreSQL connections to the bench database (the goal: below 20) and a timeline.
Asserts nothing about time.

It runs on a throwaway embedded server by default: at these concurrencies the platform
opens a connection per request in flight, which would take every connection slot of the
shared server from whatever else uses it (tests, `make run`).
"""

from __future__ import annotations

import asyncio
import json
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


async def one_stream(client: httpx.AsyncClient, url: str, token: str) -> Stream:
    stream = Stream(started=time.perf_counter())
    headers = {"Authorization": f"Bearer {token}"}
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


async def warm_up(server: Server, agent_id: str, token: str) -> None:
    """One call first, so the burst does not pay for the lazy import of the provider."""
    url = f"{server.url}/v1/agents/{agent_id}/versions/latest/invoke-stream"
    async with httpx.AsyncClient(timeout=60) as client:
        stream = await one_stream(client, url, token)
    if stream.last_type != "response.completed":
        raise RuntimeError(f"the warm-up call failed: {stream.status} {stream.error}")


async def drive(server: Server, agent_id: str, tokens: list[str], count: int) -> list[Stream]:
    url = f"{server.url}/v1/agents/{agent_id}/versions/latest/invoke-stream"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        return await asyncio.gather(
            *(one_stream(client, url, tokens[i % len(tokens)]) for i in range(count))
        )


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


def report(
    streams: list[Stream], sampler: Sampler, runs: dict[str, int], extra: dict[str, Any]
) -> bool:
    expected = expected_text(DELTAS)
    count = len(streams)
    statuses = Counter(s.status for s in streams)
    errors = [s for s in streams if s.error]
    answered = [s for s in streams if s.status == 200 and not s.error]
    completed = [s for s in answered if s.last_type == "response.completed"]
    numbered = [delta_text(n) for n in range(DELTAS)]
    exact = [s for s in completed if s.deltas == numbered]
    lost = [s for s in answered if len(s.deltas) < DELTAS]
    reordered = [s for s in answered if len(s.deltas) == DELTAS and "".join(s.deltas) != expected]
    seconds = [s.seconds for s in answered]
    first = [s.first_byte - s.started for s in answered if s.first_byte]
    start = min(s.started for s in streams)

    print(f"\n{count} concurrent invoke-stream calls, {DELTAS} deltas {PAUSE * 1000:.0f} ms apart")
    print(f"  HTTP statuses: {dict(statuses)}; failed calls: {len(errors)}")
    for reason, n in Counter(s.error[:160] for s in errors).most_common(3):
        print(f"    {n} x {reason}")
    print(
        f"  completed (response.completed): {len(completed)}/{count}; "
        f"deltas exact and in order: {len(exact)}/{count}; "
        f"streams with lost deltas: {len(lost)}; reordered: {len(reordered)}"
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
        f"  model calls seen by the fake: {extra['fake']['calls']}, "
        f"open at once at most: {extra['fake']['peakStreams']}"
    )
    before = sampler.samples[0].rss / 2**20
    print(
        f"  server peak RSS: {sampler.peak('rss') / 2**20:.0f} MiB (idle before: {before:.0f} MiB);"
        f" peak threads: {sampler.peak('threads')}"
    )
    print(
        "  CPU s during the run: "
        + ", ".join(f"{name} {value:.1f}" for name, value in extra["cpu"].items())
        + f" (of {extra['wall'] * (os.cpu_count() or 1):.1f} available)"
    )
    peak = sampler.peak("connections")
    print(
        f"  peak PostgreSQL connections to the bench database: {peak} "
        f"(goal < {CONNECTION_GOAL}: {'met' if peak < CONNECTION_GOAL else 'NOT met'})"
    )
    if answered:
        # All answered streams open: after the last first byte, before the first one ended.
        since = max(s.first_byte for s in answered)
        until = min(s.finished for s in answered)
        during = sampler.peak("connections", since, until) if since < until else "no such moment"
        print(f"  peak connections while every answered stream was open: {during}")
    print(f"  runs recorded (the warm-up call's included): {runs}")
    timeline(streams, sampler)
    ok = len(exact) == count and runs.get("completed", 0) == count + 1
    print(f"\nevery stream complete and exact, one completed run each: {'yes' if ok else 'NO'}")
    return ok


def measure(db: Database, count: int) -> bool:
    data = bench_data(callers=16)
    fake, fake_url = start_sse_fake("--deltas", str(DELTAS), "--pause", str(PAUSE))
    try:
        env = {
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": f"{fake_url}/v1",
            "OPENAI_API_KEY": "bench-key",
        }
        with running(Server(env)) as server:
            asyncio.run(warm_up(server, data.agent_id, data.tokens[0]))
            sampler = Sampler(db, server.pid)
            sampler.start()
            try:
                time.sleep(0.2)
                cpu = {
                    p: cpu_seconds(pid) for p, pid in (("server", server.pid), ("fake", fake.pid))
                }
                client_cpu, started = time.process_time(), time.perf_counter()
                streams = asyncio.run(drive(server, data.agent_id, data.tokens, count))
                wall = time.perf_counter() - started
                used = {
                    "server": cpu_seconds(server.pid) - cpu["server"],
                    "model fake": cpu_seconds(fake.pid) - cpu["fake"],
                    "client (this process)": time.process_time() - client_cpu,
                }
                time.sleep(0.5)  # each run is saved after its last byte
            finally:
                sampler.done.set()
                sampler.join()
            problems = server.problem_summary()
        stats = httpx.get(f"{fake_url}/stats").json()
    finally:
        stop_process(fake)
    extra = {"fake": stats, "cpu": used, "wall": wall}
    ok = report(streams, sampler, run_counts(data.agent_id), extra)
    if problems:
        print("server log (each line counted, tracebacks' frames left out):")
        for line in problems[:10]:
            print(f"  {line}")
    return ok


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="private").parse_args()
    print(machine())
    db = prepare(args.db)
    try:
        ok = measure(db, 100 if args.quick else 500)
    finally:
        db.close()
    print(f"done; {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
