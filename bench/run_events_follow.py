"""Many clients following runs' events (GET /v1/runs/{id}/events) next to the same runs'
streams served directly (invoke-stream), on one uvicorn process.

    .venv/bin/python bench/run_events_follow.py [--quick] [--streams N] [--db private|shared]

The model (bench/sse_fake.py, in its own process) streams 50 deltas 40 ms apart, each
stamped with the clock it was sent at. Two bursts of N runs at once (default 500; --quick:
100) of a one-tool agent, from the same client, on the same server:

- direct: N POST .../invoke-stream, each stream read to its end (the baseline);
- followed: N background runs (the same invoke with `"background": true`: without a broker
  the server's runner takes them, agents.runs.detached), each followed from index 0 by one
  client of GET /v1/runs/{id}/events to its end;
- sent: the same N sends, nobody following (the benchmark waits for the runs' rows to say
  they ended): what starting runs this way costs without the following, so that followed
  minus sent is what following costs.

Checks that every stream of both has every delta in order and ends completed. Prints, for
each burst: the server's CPU time (its process's user + system), the PostgreSQL
transactions on the bench database during the burst (every statement the server sends
outside a transaction is one) and its peak connections, and the delay of each delta from
the model writing it to the client reading it (p50, p99); then the ratios followed / direct
(the goal: CPU within 1.5x) and, last, one line for scripts.

Asserts nothing about time. It runs on a throwaway embedded server by default.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Awaitable, Callable
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
from sse_fake import delta_text

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

DELTAS = 50
PAUSE = 0.04
CPU_GOAL = 1.5
REQUEST = {"messages": [{"role": "user", "content": "Count for the benchmark."}]}
DELTA = "response.output_text.delta"
NUMBERED = [delta_text(n) for n in range(DELTAS)]


@dataclass
class Stream:
    deltas: list[str] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)  # s, model write to client read
    last_type: str = ""
    error: str = ""

    def take(self, line: dict[str, Any]) -> None:
        self.last_type = line["type"]
        if line["type"] == DELTA:
            text, _, sent = line["delta"].partition("@")
            self.deltas.append(text)
            self.delays.append(time.monotonic() - float(sent))

    @property
    def exact(self) -> bool:
        return self.deltas == NUMBERED and self.last_type == "response.completed"


async def read_lines(response: httpx.Response, stream: Stream) -> None:
    if response.status_code != 200:
        stream.error = f"{response.status_code}: {(await response.aread())[:200]!r}"
        return
    async for line in response.aiter_lines():
        if line:  # an empty line is a keep-alive
            stream.take(json.loads(line))


async def direct(client: httpx.AsyncClient, base: str, agent_id: str, token: str) -> Stream:
    stream = Stream()
    url = f"{base}/v1/agents/{agent_id}/versions/latest/invoke-stream"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with client.stream("POST", url, json=REQUEST, headers=headers) as response:
            await read_lines(response, stream)
    except httpx.HTTPError as exc:
        stream.error = repr(exc)
    return stream


async def send(client: httpx.AsyncClient, base: str, agent_id: str, token: str) -> str:
    """A background run (the same invoke with `"background": true`): the run's id."""
    headers = {"Authorization": f"Bearer {token}"}
    url = f"{base}/v1/agents/{agent_id}/versions/latest/invoke"
    answer = await client.post(url, json={**REQUEST, "background": True}, headers=headers)
    return str(answer.json()["runId"])


async def followed(client: httpx.AsyncClient, base: str, agent_id: str, token: str) -> Stream:
    stream = Stream()
    headers = {"Authorization": f"Bearer {token}"}
    try:
        run_id = await send(client, base, agent_id, token)
        url = f"{base}/v1/runs/{run_id}/events"
        async with client.stream("GET", url, headers=headers) as response:
            await read_lines(response, stream)
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        stream.error = repr(exc)
    return stream


class Transactions:
    """The bench database's committed transactions and peak connections, read from a
    connection to `postgres` (not one of those counted)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def count(self) -> int:
        """Committed plus rolled back, once PostgreSQL's counters have settled: a backend
        reports its counts at most once a second, an idle one within ten."""
        query = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s"
        with self.db.connect() as conn:
            last, steady = -1, 0
            deadline = time.monotonic() + 15
            while steady < 2 and time.monotonic() < deadline:
                now = conn.execute(query, [self.db.name]).fetchone()[0]
                steady = steady + 1 if now == last else 0
                last = now
                time.sleep(1.0)
        # This connection's own reads go to `postgres`: none is counted.
        return int(last)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
        with self.db.connect() as conn:
            while not self._done.is_set():
                self.peak = max(self.peak, conn.execute(query, [self.db.name]).fetchone()[0])
                self._done.wait(0.05)


@dataclass
class Burst:
    name: str
    streams: list[Stream]
    cpu: float
    wall: float
    transactions: int
    peak_connections: int

    def delays(self) -> list[float]:
        return [d for s in self.streams for d in s.delays]

    def exact(self) -> int:
        return sum(1 for s in self.streams if s.exact)


Client = Callable[[httpx.AsyncClient, int], Awaitable[Stream]]


async def drive(one: Client, count: int) -> list[Stream]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:
        return await asyncio.gather(*(one(client, i) for i in range(count)))


def burst(
    db: Database,
    server: Server,
    name: str,
    one: Client,
    count: int,
    ended: Callable[[], bool] = lambda: True,
) -> Burst:
    asyncio.run(drive(one, 1))  # a warm-up: the burst does not pay for lazy imports
    while not ended():
        time.sleep(0.2)
    print(f"{name}: {count} runs at once (server pid {server.pid})", flush=True)
    watch = Transactions(db)
    before_tx = watch.count()
    watch.start()
    try:
        before, started = cpu_seconds(server.pid), time.perf_counter()
        streams = asyncio.run(drive(one, count))
        while not ended():  # runs nobody follows: until their rows say they ended
            time.sleep(0.2)
        wall = time.perf_counter() - started
        time.sleep(0.5)  # each run is saved after its last byte
        cpu = cpu_seconds(server.pid) - before
    finally:
        watch.stop()
    return Burst(name, streams, cpu, wall, watch.count() - before_tx, watch.peak)


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def report(bursts: list[Burst], count: int) -> bool:
    rows = []
    for b in bursts:
        delays = b.delays()
        errors = [s.error for s in b.streams if s.error]
        rows.append(
            [
                b.name,
                len(b.streams),
                len(errors),
                b.exact(),
                f"{b.cpu:.1f}",
                f"{b.cpu / len(b.streams) * 1000:.1f}",
                b.transactions,
                f"{b.transactions / len(b.streams):.1f}",
                b.peak_connections,
                f"{percentile(delays, 50) * 1000:.0f}",
                f"{percentile(delays, 99) * 1000:.0f}",
                f"{b.wall:.1f}",
            ]
        )
        for error in sorted(set(errors))[:3]:
            print(f"  {b.name}: {errors.count(error)} x {error}")
    headers = [
        "burst",
        "runs",
        "errors",
        "exact",
        "server CPU s",
        "CPU/run ms",
        "PG xacts",
        "xacts/run",
        "peak PG conns",
        "delay p50 ms",
        "delay p99 ms",
        "wall s",
    ]
    print(f"\n{count} runs, {DELTAS} deltas {PAUSE * 1000:.0f} ms apart, one uvicorn process")
    print(table(headers, rows))
    baseline, follow, sent = bursts
    cpu = ratio(follow.cpu, baseline.cpu)
    print(
        f"followed / direct: server CPU {cpu:.2f}x (goal <= {CPU_GOAL}x: "
        f"{'met' if cpu <= CPU_GOAL else 'NOT met'}), PostgreSQL transactions "
        f"{ratio(follow.transactions, baseline.transactions):.2f}x, delay p50 "
        f"{percentile(follow.delays(), 50) * 1000:.0f} ms vs "
        f"{percentile(baseline.delays(), 50) * 1000:.0f} ms"
    )
    following = follow.cpu - sent.cpu
    print(
        f"following alone (followed - sent): {following:.1f} s of server CPU, "
        f"{following / count * 1000:.1f} ms a follower, "
        f"{ratio(following, baseline.cpu):.2f}x the direct streams' whole CPU; "
        f"background runs, unfollowed: {ratio(sent.cpu, baseline.cpu):.2f}x direct"
    )
    return all(b.exact() == len(b.streams) for b in bursts[:2])


def measure(db: Database, count: int) -> tuple[bool, list[Burst]]:
    data = bench_data(callers=16)
    fake, fake_url = start_sse_fake("--deltas", str(DELTAS), "--pause", str(PAUSE), "--stamp")
    tokens = data.tokens
    try:
        env = {
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": f"{fake_url}/v1",
            "OPENAI_API_KEY": "bench-key",
            # The runner takes the whole burst at once, as the server takes the direct
            # streams: at its default (32 at a time) the background runs would not be the
            # same streams (fewer at once, each flushing its events more often).
            "DETACHED_RUNS_CONCURRENCY": str(count),
        }
        with running(Server(env)) as server:
            base = server.url

            async def one_direct(client: httpx.AsyncClient, i: int) -> Stream:
                return await direct(client, base, data.agent_id, tokens[i % len(tokens)])

            async def one_followed(client: httpx.AsyncClient, i: int) -> Stream:
                return await followed(client, base, data.agent_id, tokens[i % len(tokens)])

            async def one_sent(client: httpx.AsyncClient, i: int) -> Stream:
                await send(client, base, data.agent_id, tokens[i % len(tokens)])
                return Stream()

            def all_ended() -> bool:
                return set(run_counts(data.agent_id)) <= {"completed", "failed", "canceled"}

            bursts = [
                burst(db, server, "direct", one_direct, count),
                burst(db, server, "followed", one_followed, count),
                burst(db, server, "sent", one_sent, count, all_ended),
            ]
            problems = server.problem_summary()
    finally:
        stop_process(fake)
    ok = report(bursts, count)
    runs = run_counts(data.agent_id)
    print(f"runs recorded (three warm-ups included): {runs}")
    ok = ok and runs.get("completed", 0) == 3 * count + 3
    if problems:
        print("server log (each line counted, tracebacks' frames left out):")
        for line in problems[:10]:
            print(f"  {line}")
    return ok, bursts


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument(
        "--streams", type=int, default=None, help="runs in each burst (default 500; --quick: 100)"
    )
    args = parser.parse_args()
    count = args.streams or (100 if args.quick else 500)
    print(machine())
    db = prepare(args.db)
    try:
        ok, bursts = measure(db, count)
    finally:
        db.close()
    baseline, follow, _ = bursts
    print(f"\ndone; {machine()}")
    print(  # the last line, for scripts
        f"run events: followed/direct CPU {ratio(follow.cpu, baseline.cpu):.2f}x, "
        f"direct CPU/run {baseline.cpu / len(baseline.streams) * 1000:.1f} ms, "
        f"followed CPU/run {follow.cpu / len(follow.streams) * 1000:.1f} ms, "
        f"delay p99 direct {percentile(baseline.delays(), 99) * 1000:.0f} ms, "
        f"followed {percentile(follow.delays(), 99) * 1000:.0f} ms"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
