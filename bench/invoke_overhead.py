"""What the platform costs per call: POST .../versions/latest/invoke of a one-tool agent
against a model that answers at once, next to a bare async Django view on the same server.

    .venv/bin/python bench/invoke_overhead.py [--quick]

Two rows: the OpenAI-compatible provider against tests/fakes' FakeOpenAI (in this
process, answering every request with the same text turn), and the offline model
(LLM_OFFLINE=true). Each row has its own uvicorn process, which also serves the baseline
(`/bench/bare`, see bench/urls.py). Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import asyncio
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
    cpu_seconds,
    machine,
    percentile,
    prepare,
    run_counts,
    running,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

REQUEST = INVOKE_REQUEST
ANSWER = ("Hello ", "from the ", "benchmark's ", "fake model.")


@dataclass
class Load:
    requests: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    run_ids: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Load) -> None:
        self.requests += other.requests
        self.wall += other.wall
        self.server_cpu += other.server_cpu
        self.latencies += other.latencies
        self.statuses += other.statuses
        self.run_ids |= other.run_ids
        self.failures += other.failures

    @property
    def rate(self) -> float:
        return self.requests / self.wall if self.wall else 0.0

    @property
    def cpu_ms(self) -> float:
        """Server process CPU per request, in milliseconds (PostgreSQL's not included)."""
        return self.server_cpu / self.requests * 1000 if self.requests else 0.0

    @property
    def not_ok(self) -> int:
        return self.requests - self.statuses[200]


async def load(
    client: httpx.AsyncClient,
    server: Server,
    url: str,
    tokens: list[str],
    total: int,
    concurrency: int,
) -> Load:
    """`total` POSTs of REQUEST, `concurrency` at a time, each worker as its own caller."""
    result = Load(requests=total)
    numbers = iter(range(total))

    async def worker(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(url, json=REQUEST, headers=headers)
            except httpx.HTTPError as exc:
                result.statuses[0] += 1
                result.failures.append(repr(exc))
                continue
            result.latencies.append(time.perf_counter() - started)
            result.statuses[response.status_code] += 1
            if response.status_code != 200:
                result.failures.append(f"{response.status_code} {response.text[:300]}")
            if run_id := response.headers.get("X-Run-Id"):
                result.run_ids.add(run_id)

    cpu, started = cpu_seconds(server.pid), time.perf_counter()
    await asyncio.gather(*(worker(tokens[i % len(tokens)]) for i in range(concurrency)))
    result.wall = time.perf_counter() - started
    result.server_cpu = cpu_seconds(server.pid) - cpu
    return result


@dataclass
class Row:
    name: str
    platform: Load
    bare: Load
    runs: dict[str, int]
    sessions: int
    floors: dict[str, Load] = field(default_factory=dict)


# bench/urls.py's floors: the bare view plus the platform's statements, plus the model
# call; the same behind the API's own DRF view.
FLOORS = {
    "db": "floor?db",
    "db+model": "floor?db&model",
    "api+db": "floor-api",
    "api+db+model": "floor-api?model",
}


async def measure(
    server: Server, data: BenchData, *, total: int, warmup: int, concurrency: int, model: bool
) -> tuple[Load, Load, dict[str, Load], dict[str, Any]]:
    from agents.access.tokens import token_decode

    invoke = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"
    bare = f"{server.url}/bench/bare"
    floors = {
        name: f"{server.url}/bench/{path}"
        for name, path in FLOORS.items()
        if model or "model" not in name
    }
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        sample = await client.post(
            invoke, json=REQUEST, headers={"Authorization": f"Bearer {data.tokens[0]}"}
        )
        sample.raise_for_status()
        (await client.put(bare, json=sample.json())).raise_for_status()
        caller = token_decode(data.tokens[0]).user_id
        floor = {"agent": data.agent_id, "user": caller}
        (await client.put(f"{server.url}/bench/floor", json=floor)).raise_for_status()
        for url in (invoke, bare, *floors.values()):
            await load(client, server, url, data.tokens, warmup, concurrency)
        # Alternate halves so drift on a shared machine falls on every side alike.
        platform, baseline = Load(), Load()
        floor_loads = {name: Load() for name in floors}
        for _ in range(2):
            baseline.add(await load(client, server, bare, data.tokens, total // 2, concurrency))
            platform.add(await load(client, server, invoke, data.tokens, total // 2, concurrency))
            for name, url in floors.items():
                floor_loads[name].add(
                    await load(client, server, url, data.tokens, total // 2, concurrency)
                )
    return platform, baseline, floor_loads, sample.json()


def sessions_opened(db: Database) -> int:
    """Connections ever opened to the bench database (PostgreSQL 14+ counts them)."""
    with db.connect() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", [db.name]
        ).fetchone()
    return int(row[0]) if row else 0


def bench_row(
    name: str,
    db: Database,
    env: dict[str, str],
    *,
    total: int,
    warmup: int,
    concurrency: int,
    model: bool,
) -> Row:
    data = bench_data(callers=concurrency)
    with running(Server({"DJANGO_SETTINGS_MODULE": "bench.settings", **env})) as server:
        before = sessions_opened(db)
        platform, baseline, floors, sample = asyncio.run(
            measure(server, data, total=total, warmup=warmup, concurrency=concurrency, model=model)
        )
        time.sleep(0.5)  # a closed session reaches the statistics when its backend exits
        sessions = sessions_opened(db) - before
        problems = server.problem_summary()
    runs = run_counts(data.agent_id)
    print(f"\n{name}: answer {sample['output'][-1]['content'][0]['text']!r}")
    if problems:
        print("  server log (each line counted, tracebacks' frames left out):")
        for line in problems[:10]:
            print(f"    {line}")
    for load_ in (platform, baseline, *floors.values()):
        for failure in load_.failures[:5]:
            print(f"  failed: {failure}")
    return Row(name, platform, baseline, runs, sessions, floors)


def connect_cost(db: Database, times: int = 30) -> float:
    """Mean seconds to open and close one connection to the bench database."""
    started = time.perf_counter()
    for _ in range(times):
        db.connect(db.name).close()
    return (time.perf_counter() - started) / times


def report(rows: list[Row], *, total: int, warmup: int, concurrency: int) -> bool:
    ms = 1000.0
    print(f"\n{total} timed requests each (after {warmup} warm-up), concurrency {concurrency}")
    print(
        table(
            [
                "model",
                "invoke req/s",
                "bare req/s",
                "ratio",
                "invoke p50 ms",
                "invoke p99 ms",
                "bare p50 ms",
                "bare p99 ms",
                "invoke CPU ms",
                "bare CPU ms",
            ],
            [
                [
                    row.name,
                    f"{row.platform.rate:.0f}",
                    f"{row.bare.rate:.0f}",
                    f"{row.platform.rate / row.bare.rate:.3f}",
                    f"{percentile(row.platform.latencies, 50) * ms:.1f}",
                    f"{percentile(row.platform.latencies, 99) * ms:.1f}",
                    f"{percentile(row.bare.latencies, 50) * ms:.1f}",
                    f"{percentile(row.bare.latencies, 99) * ms:.1f}",
                    f"{row.platform.cpu_ms:.1f}",
                    f"{row.bare.cpu_ms:.1f}",
                ]
                for row in rows
            ],
        )
    )
    print("(CPU ms: the server process's CPU time per request; PostgreSQL's is not in it)")
    print(floors_table(rows))
    ok = True
    print()
    for row in rows:
        invoked = total + warmup + 1
        written = sum(row.runs.values())
        completed = row.runs.get("completed", 0)
        not_ok = row.platform.not_ok + row.bare.not_ok
        per_call = row.sessions / invoked
        print(
            f"{row.name}: run rows written {written} (calls {invoked}, completed {completed}, "
            f"distinct X-Run-Id {len(row.platform.run_ids)}/{row.platform.requests}); "
            f"non-200 responses {not_ok}; "
            f"PostgreSQL connections opened {row.sessions} ({per_call:.2f} per invoke)"
        )
        not_ok += sum(floor.not_ok for floor in row.floors.values())
        ok = ok and not_ok == 0 and written == invoked == completed
    print(f"every response 200 and one completed run per call: {'yes' if ok else 'NO'}")
    return ok


def floors_table(rows: list[Row]) -> str:
    """The invoke against the floors: what any design that keeps the invoke's guarantees
    pays on this stack (the bare view, the same statements, the same model call), and the
    same behind the API's DRF view."""
    lines = []
    for row in rows:
        cpu = [row.floors[name].cpu_ms if name in row.floors else None for name in FLOORS]
        floor = next(row.floors[name] for name in reversed(FLOORS) if name in row.floors)
        lines.append(
            [
                row.name,
                f"{row.bare.cpu_ms:.1f}",
                *(f"{ms:.1f}" if ms is not None else "-" for ms in cpu),
                f"{row.platform.cpu_ms:.1f}",
                f"{floor.cpu_ms / row.bare.cpu_ms:.2f}x",
                f"{row.platform.cpu_ms / floor.cpu_ms:.2f}x",
                f"{floor.rate / row.bare.rate:.3f}",
                f"{row.platform.rate / floor.rate:.3f}",
            ]
        )
    headers = [
        "model",
        "bare CPU ms",
        *(f"floor {name}" for name in FLOORS),
        "invoke CPU ms",
        "floor/bare CPU",
        "invoke/floor CPU",
        "floor/bare req/s",
        "invoke/floor req/s",
    ]
    return (
        "\nFloors (bench/urls.py's /bench/floor and /bench/floor-api): the bare view plus the"
        " invoke's own database\nstatements (db), plus the model call read to its end (model),"
        " behind the API's DRF view (api);\nthe ratios take the last floor a row has\n"
        + table(headers, lines)
    )


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="shared").parse_args()
    total, warmup, concurrency = (300, 30, 16) if args.quick else (2000, 200, 16)
    print(machine())
    db = prepare(args.db)
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Turn

    try:
        with FakeOpenAI() as fake:
            fake.fallback = Turn(text=ANSWER)
            openai_env = {
                "LLM_OFFLINE": "false",
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench-key",
            }
            sizes = {"total": total, "warmup": warmup, "concurrency": concurrency}
            rows = [
                bench_row("openai/gpt-4o-mini (FakeOpenAI)", db, openai_env, **sizes, model=True),
                bench_row(
                    "local.demo-v1 (LLM_OFFLINE)", db, {"LLM_OFFLINE": "true"}, **sizes, model=False
                ),
            ]
            model_calls = len(fake.requests)
        ok = report(rows, **sizes)
        print(f"FakeOpenAI answered {model_calls} model calls")
        print(f"open+close of one PostgreSQL connection: {connect_cost(db) * 1000:.2f} ms")
    finally:
        db.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
