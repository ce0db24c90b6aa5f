"""What pruning a million old runs costs, and what it costs the invokes running meanwhile
(issue 33, "Tests and measures"; agents.runs.retention).

    nice .venv/bin/python bench/prune.py [--quick] [--runs N] [--batch N] [--concurrency N]
        [--db private|shared]

1. Fill: `--runs` runs (1,000,000; `--quick`: 50,000) that ended 100 to 200 days ago,
   written by generate_series from one real run's row (the offline model's invoke: its
   messages, output and steps), with EVENTS events each, a webhook delivery for one run in
   DELIVERY_EVERY, and feedback on one in FEEDBACK_EVERY (kept by the prune); then
   VACUUM ANALYZE (as autovacuum would have) and a CHECKPOINT, so the fill's writes are
   not in the baseline.
2. Baseline: non-streamed invokes of a one-tool agent on the offline model, `--concurrency`
   at a time, against one uvicorn process, for BASELINE_SECONDS.
3. Prune: `runs_prune(days=90)` in this process (its own connection), while the invokes go
   on; then AFTER_SECONDS more of invokes.

Prints the prune's time, runs/s and rows removed, its longest batch (one transaction), and
the lock waits seen: a third connection samples pg_locks every SAMPLE_SECONDS for lock
requests not granted, with `clock_timestamp() - waitstart` and `pg_blocking_pids`, and
prints the longest wait of an invoke's backend behind the prune apart from the longest
behind another invoke; and what the invokes' backends waited on (wait events, per
sample) in each window. A wait shorter than the sampling
period can slip between two samples, so the invokes' latency percentiles during the prune
against the baseline window are the other measure: a lock an invoke waited on shows in its
latency, whatever its length. Exits 1 when an invoke fails, when the prune leaves an old
run it should have removed or removes one it should have kept. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from common import (
    INVOKE_REQUEST,
    BenchData,
    Database,
    Server,
    arguments,
    bench_data,
    machine,
    percentile,
    prepare,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

EVENTS = 3  # per run; RUN_EVENTS_TTL (a day) has removed most by 90 days, kept here
DELIVERY_EVERY = 5
FEEDBACK_EVERY = 1000
DAYS = 90
BASELINE_SECONDS = 30.0
AFTER_SECONDS = 10.0
SAMPLE_SECONDS = 0.01


@dataclass
class Invokes:
    """(start, latency, status) of each invoke, by time.monotonic()."""

    calls: list[tuple[float, float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def window(self, start: float, end: float) -> list[float]:
        return [lat for at, lat, _ in self.calls if start <= at and at + lat <= end]

    def failed(self) -> int:
        return sum(1 for _, _, status in self.calls if status != 200)


def invoke_loop(server: Server, data: BenchData, concurrency: int, invokes: Invokes) -> None:
    url = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"

    async def worker(token: str, client: httpx.AsyncClient) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        while not invokes.stop.is_set():
            started = time.monotonic()
            try:
                response = await client.post(url, json=INVOKE_REQUEST, headers=headers)
                status = response.status_code
            except httpx.HTTPError:
                status = 0
            invokes.calls.append((started, time.monotonic() - started, status))

    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=120) as client:
            tokens = data.tokens
            workers = (worker(tokens[i % len(tokens)], client) for i in range(concurrency))
            await asyncio.gather(*workers)

    asyncio.run(main())


@dataclass
class LockWaits:
    """What the sampler saw: lock requests not granted, and the backends' wait events."""

    # (pid, seconds waited so far, lock and query, pids blocking it)
    waits: list[tuple[int, float, str, list[int]]] = field(default_factory=list)
    # (time.monotonic(), pid, wait_event_type, wait_event) of active backends that wait
    events: list[tuple[float, int, str, str]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # of each sample
    stop: threading.Event = field(default_factory=threading.Event)

    def longest(self, prune: int, *, behind_prune: bool) -> tuple[float, str]:
        """The longest wait seen of a backend other than the prune's, behind the prune or
        behind others."""
        found = [
            (seconds, what)
            for pid, seconds, what, blockers in self.waits
            if pid != prune and (prune in blockers) == behind_prune
        ]
        return max(found, default=(0.0, "none"))

    def samples_in(self, start: float, end: float) -> int:
        return sum(1 for at in self.times if start <= at < end)


def sample_locks(db: Database, waits: LockWaits) -> None:
    with db.connect(db.name) as conn:
        while not waits.stop.is_set():
            rows = conn.execute(
                "SELECT l.pid, extract(epoch FROM clock_timestamp() - l.waitstart),"
                " l.locktype || ' ' || coalesce(l.relation::regclass::text, '')"
                " || ' ' || left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60),"
                " pg_blocking_pids(l.pid)"
                " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE NOT l.granted AND a.datname = current_database()"
            ).fetchall()
            waits.waits += [(p, float(s), w, b) for p, s, w, b in rows if s is not None]
            now = time.monotonic()
            waits.events += [
                (now, pid, kind, event)
                for pid, kind, event in conn.execute(
                    "SELECT pid, wait_event_type, wait_event FROM pg_stat_activity"
                    " WHERE datname = current_database() AND state = 'active'"
                    " AND pid <> pg_backend_pid() AND wait_event_type IS NOT NULL"
                    # Not autovacuum's worker, whose VacuumDelay is no invoke's wait.
                    " AND backend_type = 'client backend'"
                )
            ]
            waits.times.append(now)
            time.sleep(SAMPLE_SECONDS)


def fill(runs: int, agent_id: str) -> dict[str, int]:
    """One invoke's run row copied `runs` times, ended 100 to 200 days ago, with events,
    deliveries and feedback; what was written."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.models import Run

    template = Run.objects.filter(agent_id=agent_id, status="completed").first()
    assert template is not None, "the sample invoke left no run"
    user = get_user_model().objects.get(username="bench-admin")
    span = 100 * 86400  # seconds between the oldest and the youngest old run
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'agents_run' ORDER BY ordinal_position"
        )
        columns = [c for (c,) in cursor.fetchall()]
        made = {
            "id": "gen_random_uuid()",
            "started_at": f"now() - interval '100 days' - g * interval '{span / runs} seconds'",
            "completed_at": (
                f"now() - interval '100 days' - g * interval '{span / runs} seconds'"
                " + interval '2 seconds'"
            ),
        }
        select = ", ".join(made.get(c, f"t.{c}") for c in columns)
        cursor.execute(
            f"INSERT INTO agents_run ({', '.join(columns)})"  # noqa: S608
            f" SELECT {select} FROM agents_run t, generate_series(1, %s) g WHERE t.id = %s",
            [runs, template.pk],
        )
        cursor.execute(
            "INSERT INTO agents_runevent (run_id, index, event)"
            " SELECT r.id, i, jsonb_build_object('type', 'text_delta', 'text', repeat('x', 80))"
            " FROM agents_run r, generate_series(0, %s) i"
            " WHERE r.started_at < now() - interval '99 days'",
            [EVENTS - 1],
        )
        events = cursor.rowcount
        cursor.execute(
            "INSERT INTO agents_webhookdelivery (id, key, environment_id, run_id, event,"
            " format, url, headers_encrypted, payload, status, attempts, last_response,"
            " last_error, history, created_at)"
            " SELECT gen_random_uuid(), r.id::text || ':run.completed:bench', a.environment_id,"
            " r.id, 'run.completed', 'standard', 'http://127.0.0.1:9/hook', '',"
            " '{\"type\": \"run.completed\"}', 'delivered', 1, '', '', '[]', r.completed_at"
            " FROM agents_run r JOIN agents_agent a ON a.id = r.agent_id"
            " WHERE r.started_at < now() - interval '99 days'"
            " AND abs(hashtext(r.id::text)) %% %s = 0",
            [DELIVERY_EVERY],
        )
        deliveries = cursor.rowcount
        cursor.execute(
            "INSERT INTO agents_runfeedback (run_id, user_id, score, comment, created_at)"
            " SELECT r.id, %s, 1, '', now() FROM agents_run r"
            " WHERE r.started_at < now() - interval '99 days'"
            " AND abs(hashtext(r.id::text || 'f')) %% %s = 0",
            [user.pk, FEEDBACK_EVERY],
        )
        feedback = cursor.rowcount
        cursor.execute("VACUUM ANALYZE")  # and its writes settled before the baseline
        cursor.execute("CHECKPOINT")
    connection.close()
    return {"runs": runs, "events": events, "deliveries": deliveries, "feedback": feedback}


def sizes() -> str:
    from agents.selectors.storage import table_sizes

    return ", ".join(f"{t.label} {t.bytes / 2**20:.0f} MiB" for t in table_sizes()[:3])


def prune(batch: int, result: dict[str, Any]) -> None:
    """runs_prune in this thread, its batches timed: the longest holds its rows' locks."""
    from django.db import connection

    from agents.runs import retention

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        result["pid"] = cursor.fetchone()[0]
    batches: list[float] = []
    timed = retention._runs_batch

    def runs_batch(*args: Any) -> Any:
        started = time.monotonic()
        try:
            return timed(*args)
        finally:
            batches.append(time.monotonic() - started)

    retention._runs_batch = runs_batch  # type: ignore[assignment]
    try:
        result["start"] = time.monotonic()
        result["report"] = retention.runs_prune(days=DAYS, batch=batch)
        result["end"] = time.monotonic()
    finally:
        retention._runs_batch = timed  # type: ignore[assignment]
        connection.close()
    result["batches"] = batches


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--runs", type=int, help="old runs to prune (1,000,000)")
    parser.add_argument("--batch", type=int, default=2000, help="runs a transaction")
    parser.add_argument("--concurrency", type=int, default=4, help="invokes at once")
    args = parser.parse_args()
    runs = args.runs or (50_000 if args.quick else 1_000_000)
    print(machine())
    db = prepare(args.db)
    try:
        return measure(db, runs, args.batch, args.concurrency)
    finally:
        db.close()


def measure(db: Database, runs: int, batch: int, concurrency: int) -> int:
    from agents.models import Run

    data = bench_data(callers=concurrency)
    # No event prune nor beat in the server: the prune measured is this one alone.
    env = {"LLM_OFFLINE": "true", "RUN_EVENTS_TTL": str(10**9), "BEAT_EMBEDDED": "false"}
    server = Server(env)
    try:
        server.start(timeout=180)  # a busy 2-core machine starts it slowly
        headers = {"Authorization": f"Bearer {data.tokens[0]}"}
        url = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"
        httpx.post(url, json=INVOKE_REQUEST, headers=headers, timeout=60).raise_for_status()
        started = time.monotonic()
        written = fill(runs, data.agent_id)
        print(f"filled in {time.monotonic() - started:.0f} s: {written}; {sizes()}")

        invokes, waits, result = Invokes(), LockWaits(), {}
        loop = threading.Thread(target=invoke_loop, args=(server, data, concurrency, invokes))
        sampler = threading.Thread(target=sample_locks, args=(db, waits))
        loop.start()
        sampler.start()
        try:
            baseline_start = time.monotonic()
            time.sleep(BASELINE_SECONDS)
            prune(batch, result)
            time.sleep(AFTER_SECONDS)
        finally:
            invokes.stop.set()
            waits.stop.set()
            loop.join()
            sampler.join()
        old_left = Run.objects.filter(started_at__lt=time_ago(DAYS)).count()
        print(f"after: {sizes()}")
    finally:
        server.close()
    return report(written, result, invokes, waits, baseline_start, old_left)


def time_ago(days: int) -> Any:
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=days)


def report(
    written: dict[str, int],
    result: dict[str, Any],
    invokes: Invokes,
    waits: LockWaits,
    baseline_start: float,
    old_left: int,
) -> int:
    pruned = result["report"]
    seconds = result["end"] - result["start"]
    print(
        f"\nprune: {seconds:.1f} s, {pruned.runs / seconds:,.0f} runs/s, "
        f"{pruned.batches} transactions; longest batch of runs "
        f"{max(result['batches']) * 1000:.0f} ms, median "
        f"{percentile(result['batches'], 50) * 1000:.0f} ms"
    )
    print(f"removed: {pruned.counts()}")
    baseline = invokes.window(baseline_start, result["start"])
    during = invokes.window(result["start"], result["end"])
    ms = 1000

    def row(name: str, lat: list[float]) -> list[str]:
        return [
            name,
            str(len(lat)),
            *(f"{percentile(lat, p) * ms:.1f}" for p in (50, 90, 99)),
            f"{max(lat) * ms:.1f}",
            f"{len(lat) / (seconds if name == 'during prune' else BASELINE_SECONDS):.1f}",
        ]

    print(
        table(
            ["invokes", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "invokes/s"],
            [row("baseline", baseline), row("during prune", during)],
        )
    )
    mine = result["pid"]
    behind_prune = waits.longest(mine, behind_prune=True)
    behind_others = waits.longest(mine, behind_prune=False)
    print(
        f"lock waits, sampled {len(waits.times)} times: the longest of an invoke's backend behind"
        f" the prune {behind_prune[0] * 1000:.1f} ms ({behind_prune[1]}); behind another"
        f" invoke {behind_others[0] * 1000:.1f} ms ({behind_others[1]})"
    )
    for name, start, end in (
        ("baseline", baseline_start, result["start"]),
        ("during prune", result["start"], result["end"]),
    ):
        seen = Counter(
            f"{kind}:{event}"
            for at, pid, kind, event in waits.events
            if pid != mine and start <= at < end and kind not in ("Client", "Activity")
        )
        samples = max(1, waits.samples_in(start, end))
        share = {k: f"{n / samples:.3f}" for k, n in seen.most_common(4)}
        print(f"  invokes' backends waiting, per sample, {name}: {share}")
    kept = written["feedback"]
    ok = invokes.failed() == 0 and old_left == kept and pruned.runs == written["runs"] - kept
    print(
        f"invokes failed {invokes.failed()}; old runs left {old_left} (with feedback {kept}): "
        f"{'ok' if ok else 'WRONG'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
