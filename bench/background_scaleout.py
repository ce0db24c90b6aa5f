"""Background runs through 1, then 2 Celery workers, on one PostgreSQL and one Redis.

    .venv/bin/python bench/background_scaleout.py [--quick] [--runs N] [--workers 1,2]
        [--concurrency 32] [--db private|shared]

One uvicorn process takes the calls (`POST .../invoke` with `"background": true`, answered
202); Celery workers (`--pool threads`, `--concurrency` threads each, the deployment's
setting, docs/api.md#background-runs) run them; the model (bench/sse_fake.py, its own
process) answers each call in about 200 ms (4 deltas 50 ms apart). For each number of
workers, N runs (default 2,000; --quick: 200) are posted by 64 clients at once, then the
bench waits for every run to end. Prints, per burst: runs per second (from the first 202
to the last run's end), the p50 and p99 of each run's time from its 202 to its end
(`completed_at`, the same machine's clock), CPU seconds per run of the server, the workers
and PostgreSQL, and the peak of PostgreSQL connections; then the ratio of the bursts'
runs per second (the issue's goal: 2 workers >= 1.6x one). Asserts nothing about time;
exits 1 when a run did not complete.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
import time
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
    postgres_cpu,
    prepare,
    require,
    running,
    start_redis,
    start_sse_fake,
    start_worker,
    stop_process,
    table,
    tree_cpu,
)

CLIENTS = 64  # calls in flight while posting
ANSWER = ("--deltas", "4", "--pause", "0.05")  # about 200 ms an answer


@dataclass
class Burst:
    workers: int
    runs: int
    completed: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    peak_connections: int = 0


class Connections:
    """The peak of PostgreSQL connections to the bench database, sampled every 0.2 s."""

    def __init__(self, db: Database) -> None:
        self.db, self.peak = db, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Connections:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        with self.db.connect() as connection:
            while not self._stop.is_set():
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (self.db.name,)
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)
                time.sleep(0.2)


async def post_all(base: str, agent_id: str, tokens: list[str], count: int) -> dict[str, float]:
    """Post `count` background runs; each run's id and the time its 202 arrived."""
    import httpx2 as httpx

    url = f"{base}/v1/agents/{agent_id}/versions/latest/invoke"
    body = {"messages": [{"role": "user", "content": "Count"}], "background": True}
    accepted: dict[str, float] = {}
    numbers = iter(range(count))

    async def client(http: Any) -> None:
        for n in numbers:
            headers = {"Authorization": f"Bearer {tokens[n % len(tokens)]}"}
            answer = await http.post(url, json=body, headers=headers)
            if answer.status_code != 202:
                raise RuntimeError(f"{answer.status_code}: {answer.text[:300]}")
            accepted[answer.json()["runId"]] = time.time()

    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(CLIENTS)))
    return accepted


def ended_runs(run_ids: list[str]) -> dict[str, tuple[str, float | None]]:
    from django.db import connection

    from agents.models import Run

    rows = Run.objects.filter(pk__in=run_ids, status__in=("completed", "failed", "canceled"))
    found = {
        str(pk): (status, done.timestamp() if done else None)
        for pk, status, done in rows.values_list("pk", "status", "completed_at")
    }
    connection.close()
    return found


def burst(
    db: Database,
    server: Server,
    data: Any,
    workers: int,
    count: int,
    env: dict[str, str],
    pool: str,
    concurrency: int,
) -> Burst:
    print(
        f"{workers} worker(s), --pool {pool} --concurrency {concurrency}: {count} runs", flush=True
    )
    started = [start_worker(n, env, pool, concurrency) for n in range(workers)]
    time.sleep(8)  # the workers import Django and connect before the first run
    result = Burst(workers, count)
    try:
        cpu_before = {
            "server": cpu_seconds(server.pid),
            "workers": sum(tree_cpu(p.pid) for p, _ in started),
            "postgres": postgres_cpu(),
        }
        with Connections(db) as connections:
            accepted = asyncio.run(post_all(server.url, data.agent_id, data.tokens, count))
            ids = list(accepted)
            ended: dict[str, tuple[str, float | None]] = {}
            deadline = time.monotonic() + 1800
            while len(ended) < count and time.monotonic() < deadline:
                time.sleep(0.5)
                ended = ended_runs(ids)
        result.peak_connections = connections.peak
        result.cpu = {
            "server": cpu_seconds(server.pid) - cpu_before["server"],
            "workers": sum(tree_cpu(p.pid) for p, _ in started) - cpu_before["workers"],
            "postgres": postgres_cpu() - cpu_before["postgres"],
        }
        result.completed = sum(1 for status, _ in ended.values() if status == "completed")
        done = [(run_id, at) for run_id, (_, at) in ended.items() if at is not None]
        result.latencies = [at - accepted[run_id] for run_id, at in done]
        if done:
            result.seconds = max(at for _, at in done) - min(accepted.values())
    finally:
        for process, log in started:
            stop_process(process, timeout=60)
            text = log.read_text(errors="replace")
            if "Traceback" in text:
                print(f"worker log {log}:\n{text[-3000:]}")
            log.unlink(missing_ok=True)
    return result


def report(bursts: list[Burst]) -> bool:
    rows = []
    for b in bursts:
        per_run = {k: 1000 * v / max(b.completed, 1) for k, v in b.cpu.items()}
        rows.append(
            [
                b.workers,
                b.runs,
                b.completed,
                f"{b.seconds:.1f}",
                f"{b.completed / b.seconds:.1f}" if b.seconds else "nan",
                f"{1000 * percentile(b.latencies, 50):.0f}" if b.latencies else "nan",
                f"{1000 * percentile(b.latencies, 99):.0f}" if b.latencies else "nan",
                f"{per_run['server']:.1f}",
                f"{per_run['workers']:.1f}",
                f"{per_run['postgres']:.1f}",
                b.peak_connections,
            ]
        )
    print()
    print(
        table(
            [
                "workers",
                "runs",
                "completed",
                "wall s",
                "runs/s",
                "p50 ms",
                "p99 ms",
                "server CPU/run ms",
                "workers CPU/run ms",
                "PG CPU/run ms",
                "peak PG conns",
            ],
            rows,
        )
    )
    rates = [b.completed / b.seconds for b in bursts if b.seconds]
    if len(rates) == len(bursts) >= 2:
        ratio = rates[-1] / rates[0]
        verdict = "met" if ratio >= 1.6 else "NOT met"
        print(
            f"{bursts[-1].workers} workers / {bursts[0].workers}: runs/s {ratio:.2f}x "
            f"(goal >= 1.6x: {verdict})"
        )
    return all(b.completed == b.runs for b in bursts)


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--pool", choices=("threads", "prefork"), default="threads")
    options = parser.parse_args()
    require(programs=["redis-server"])
    count = options.runs or (200 if options.quick else 2000)
    db = prepare(options.db)
    print(machine(), flush=True)
    redis, broker, workdir = start_redis()
    fake, fake_url = start_sse_fake(*ANSWER)
    try:
        data = bench_data(callers=16)
        env = {
            **os.environ,
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": f"{fake_url}/v1",
            "OPENAI_API_KEY": "bench-key",
            "CELERY_BROKER_URL": broker,
            "DETACHED_RUNS_CONCURRENCY": str(options.concurrency),
            "DB_POOL_MAX_SIZE": str(options.concurrency + 4),
        }
        with running(Server(env)) as server:
            bursts = [
                burst(db, server, data, int(n), count, env, options.pool, options.concurrency)
                for n in options.workers.split(",")
            ]
            problems = server.problem_summary()
    finally:
        stop_process(fake)
        stop_process(redis)
        shutil.rmtree(workdir, ignore_errors=True)
        db.close()
    ok = report(bursts)
    for line in problems[:10]:
        print(f"  server: {line}")
    print(f"done; {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
