"""How invoke throughput grows with gunicorn workers: the deployment command of docker/
(gunicorn with uvicorn_worker.UvicornWorker) with 1, 2, 3 and 4 workers.

    .venv/bin/python bench/workers.py [--quick] [--db private|shared] [--workers 1,2,3,4]
        [--concurrency 32] [--client raw|httpx]

Each worker count has a fresh one-tool agent and takes two blocks of non-streaming invokes
at a fixed concurrency, forward then backward (1, 2, 3, 4, 4, 3, 2, 1), so drift on a
shared machine falls on all alike; each block on a gunicorn (master and workers) started
for it on a free loopback port and stopped after it, all against one bench database, with
the offline model (LLM_OFFLINE=true). The
load generator runs in this process on the same 2 cores: its CPU is printed too. Prints
figures; asserts nothing about time. Exit 1 if a response was not 200 or a call left no
completed run row; 2 if gunicorn or uvicorn-worker is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    INVOKE_REQUEST,
    ROOT,
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
import psutil

REQUEST = INVOKE_REQUEST
REQUEST_BODY = json.dumps(REQUEST).encode()
DEPLOY_PACKAGES = ("gunicorn", "uvicorn-worker")


def require_deploy() -> None:
    """Exit 2 before anything starts if docker/requirements-deploy.txt is not installed."""
    from importlib import metadata

    missing = []
    for name in DEPLOY_PACKAGES:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        print(
            f"bench/workers.py needs {' and '.join(missing)} (the image's web server): "
            ".venv/bin/pip install -r docker/requirements-deploy.txt",
            file=sys.stderr,
        )
        sys.exit(2)


# ---------------------------------------------------------------- the server


class Gunicorn(Server):
    """docker/Dockerfile's CMD, bound to 127.0.0.1 on a free port, with `workers` workers."""

    def __init__(self, workers: int, env: dict[str, str]) -> None:
        super().__init__(env)
        self.workers = workers

    def start(self, timeout: float = 60.0) -> None:
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "agentbuilder.asgi:application",
            "-k",
            "uvicorn_worker.UvicornWorker",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            # INFO for uvicorn's "Started server process [pid]", one per worker ready;
            # problems() leaves INFO lines out.
            "--log-level",
            "info",
        ]
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        self._wait_ready(timeout)
        while len(self.started()) < self.workers:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(
                    f"gunicorn: {len(self.started())} of {self.workers} workers started:\n"
                    f"{self.tail()}"
                )
            time.sleep(0.1)
        self.log_start = Path(self.log.name).stat().st_size

    def started(self) -> set[str]:
        text = Path(self.log.name).read_text(errors="replace")
        return set(re.findall(r"Started server process \[(\d+)\]", text))

    def problems(self) -> list[str]:
        return [line for line in super().problems() if "] [INFO] " not in line]

    def worker_pids(self) -> list[int]:
        return sorted(child.pid for child in psutil.Process(self.pid).children())

    def connections(self) -> list[int]:
        """Established TCP connections held by each worker (their keep-alive clients)."""
        counts = []
        for pid in self.worker_pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                conns = psutil.Process(pid).net_connections(kind="tcp")
                counts.append(
                    sum(c.status == psutil.CONN_ESTABLISHED and bool(c.raddr) for c in conns)
                )
        return counts


# ---------------------------------------------------------------- CPU


def process_cpu(pid: int) -> float:
    """common.cpu_seconds, or 0 for a worker that has exited meanwhile."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return cpu_seconds(pid)
    return 0.0


def postgres_cpu(db: Database) -> float:
    """CPU time of the throwaway PostgreSQL so far: the postmaster, its live processes and
    those that exited (reaped by the postmaster, so in its children's times). With --db
    shared, the shared server's, which serves others too."""
    from common import SHARED_PGDATA

    pgdata = Path(db.private.pgdata) if db.private is not None else SHARED_PGDATA
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    postmaster = psutil.Process(pid)
    own = postmaster.cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for process in postmaster.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return float(total)


def machine_busy() -> float:
    """CPU seconds the whole machine has spent not idle, all cores."""
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


@dataclass
class Snapshot:
    at: float
    master: float
    workers: dict[int, float]
    client: float
    postgres: float
    machine: float

    @classmethod
    def take(cls, server: Gunicorn, db: Database) -> Snapshot:
        return cls(
            at=time.perf_counter(),
            master=process_cpu(server.pid),
            workers={pid: process_cpu(pid) for pid in server.worker_pids()},
            client=process_cpu(psutil.Process().pid),
            postgres=postgres_cpu(db),
            machine=machine_busy(),
        )


# ---------------------------------------------------------------- load


@dataclass
class Block:
    """One run of requests against one server, or the sum of several."""

    requests: int = 0
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    run_ids: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    master: float = 0.0
    workers: list[float] = field(default_factory=list)  # CPU seconds of each worker
    client: float = 0.0
    postgres: float = 0.0
    machine: float = 0.0
    sessions: int = 0
    connections: list[list[int]] = field(default_factory=list)
    restarted: bool = False

    def add(self, other: Block) -> None:
        self.requests += other.requests
        self.wall += other.wall
        self.latencies += other.latencies
        self.statuses += other.statuses
        self.run_ids |= other.run_ids
        self.failures += other.failures
        self.master += other.master
        if len(self.workers) < len(other.workers):
            self.workers += [0.0] * (len(other.workers) - len(self.workers))
        for i, cpu in enumerate(sorted(other.workers, reverse=True)):
            self.workers[i] += cpu
        self.client += other.client
        self.postgres += other.postgres
        self.machine += other.machine
        self.sessions += other.sessions
        self.connections += other.connections
        self.restarted = self.restarted or other.restarted

    def measured(self, before: Snapshot, after: Snapshot) -> None:
        self.wall = after.at - before.at
        self.master = after.master - before.master
        self.workers = [after.workers[pid] - before.workers.get(pid, 0.0) for pid in after.workers]
        self.restarted = set(after.workers) != set(before.workers)
        self.client = after.client - before.client
        self.postgres = after.postgres - before.postgres
        self.machine = after.machine - before.machine

    @property
    def server(self) -> float:
        return self.master + sum(self.workers)

    @property
    def rate(self) -> float:
        return self.requests / self.wall if self.wall else 0.0

    def per_request_ms(self, seconds: float) -> float:
        return seconds / self.requests * 1000 if self.requests else 0.0

    def cores(self, seconds: float) -> float:
        return seconds / self.wall if self.wall else 0.0

    @property
    def others(self) -> float:
        """CPU seconds the machine spent on other processes (other sessions, the kernel's
        own threads) during the block."""
        return max(0.0, self.machine - self.server - self.client - self.postgres)


class Raw:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: one connection per caller,
    the request bytes built once. Much cheaper than httpx, so the load generator takes
    less of the cores the server shares with it."""

    def __init__(self, url: str, path: str, *, close: bool = False) -> None:
        parts = httpx.URL(url)
        self.host, self.port, self.path = parts.host, parts.port, path
        self.close = close

    def request(self, token: str) -> bytes:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            + ("Connection: close\r\n" if self.close else "")
            + f"Content-Length: {len(REQUEST_BODY)}\r\n\r\n"
        )
        return head.encode() + REQUEST_BODY

    async def caller(self, token: str, numbers: Any, result: Block) -> None:
        request = self.request(token)
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            for _ in numbers:
                started = time.perf_counter()
                try:
                    writer.write(request)
                    head = await reader.readuntil(b"\r\n\r\n")
                    status, headers = _parse_head(head)
                    if headers.get("transfer-encoding") == "chunked":
                        body = await _read_chunked(reader)
                    else:
                        body = await reader.readexactly(int(headers.get("content-length", 0)))
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    result.statuses[0] += 1
                    result.failures.append(repr(exc))
                    writer.close()
                    reader, writer = await asyncio.open_connection(self.host, self.port)
                    continue
                result.latencies.append(time.perf_counter() - started)
                result.statuses[status] += 1
                if status != 200:
                    result.failures.append(f"{status} {body[:300]!r}")
                if run_id := headers.get("x-run-id"):
                    result.run_ids.add(run_id)
                if headers.get("connection") == "close":
                    writer.close()
                    reader, writer = await asyncio.open_connection(self.host, self.port)
        finally:
            writer.close()


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        body += await reader.readexactly(size + 2)
        if size == 0:
            return body


async def httpx_caller(
    client: httpx.AsyncClient, url: str, token: str, numbers: Any, result: Block
) -> None:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for _ in numbers:
        started = time.perf_counter()
        try:
            response = await client.post(url, content=REQUEST_BODY, headers=headers)
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


async def block(
    server: Gunicorn,
    db: Database,
    data: BenchData,
    *,
    total: int,
    concurrency: int,
    client: str,
    close: bool,
) -> Block:
    """`total` invokes, `concurrency` callers at a time, each on its own connection(s)."""
    from invoke_overhead import sessions_opened

    path = f"/v1/agents/{data.agent_id}/versions/latest/invoke"
    result = Block(requests=total)
    numbers = iter(range(total))
    tokens = [data.tokens[i % len(data.tokens)] for i in range(concurrency)]
    sessions = sessions_opened(db)

    async def watch() -> None:
        await asyncio.sleep(0.5)  # every caller has connected by then
        result.connections.append(server.connections())

    async with contextlib.AsyncExitStack() as stack:
        if client == "raw":
            raw = Raw(server.url, path, close=close)
            callers = [raw.caller(token, numbers, result) for token in tokens]
        else:
            limits = httpx.Limits(
                max_connections=concurrency, max_keepalive_connections=concurrency
            )
            http = await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=60))
            url = f"{server.url}{path}"
            callers = [httpx_caller(http, url, token, numbers, result) for token in tokens]
        before = Snapshot.take(server, db)
        watcher = asyncio.create_task(watch())
        await asyncio.gather(*callers)
        after = Snapshot.take(server, db)
        watcher.cancel()
    result.measured(before, after)
    await asyncio.sleep(0.3)  # a closed session reaches the statistics when its backend exits
    result.sessions = sessions_opened(db) - sessions
    return result


# ---------------------------------------------------------------- the run


@dataclass
class Row:
    workers: int
    data: BenchData
    load: Block = field(default_factory=Block)
    warmup: Block = field(default_factory=Block)
    runs: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


async def measure(
    rows: list[Row],
    db: Database,
    env: dict[str, str],
    *,
    total: int,
    warmup: int,
    concurrency: int,
    client: str,
    close: bool,
) -> None:
    """Each worker count twice, forward then backward, half of `total` each time, on a
    server started for the block (and warmed up) and stopped after it: every worker's
    pool holds up to DB_POOL_MAX_SIZE connections, more than PostgreSQL's 100 for all
    servers at once."""
    sizes = {"concurrency": concurrency, "client": client, "close": close}
    for row in [*rows, *reversed(rows)]:
        with running(Gunicorn(row.workers, env)) as server:
            pids = ", ".join(map(str, server.worker_pids()))
            print(f"{row.workers} worker(s): master {server.pid}, workers {pids}", flush=True)
            row.warmup.add(await block(server, db, row.data, total=warmup, **sizes))
            done = await block(server, db, row.data, total=total // 2, **sizes)
            row.problems += server.problem_summary()
        print(
            f"  {done.requests} requests in {done.wall:.1f} s, "
            f"{done.rate:.0f}/s, server {done.cores(done.server):.2f} cores, "
            f"client {done.cores(done.client):.2f}, PostgreSQL {done.cores(done.postgres):.2f}, "
            f"others {done.cores(done.others):.2f}",
            flush=True,
        )
        row.load.add(done)


def report(rows: list[Row], *, total: int, warmup: int, concurrency: int, client: str) -> bool:
    ms = 1000.0
    base = rows[0].load.rate if rows and rows[0].workers == 1 else None
    print(
        f"\n{rows[0].load.requests} timed invokes per worker count in two blocks (each "
        f"after {warmup} warm-up on a fresh server), "
        f"concurrency {concurrency}, client {client}, offline model"
    )
    print(
        table(
            [
                "workers",
                "req/s",
                "ratio",
                "p50 ms",
                "p99 ms",
                "server CPU ms",
                "server cores",
                "per worker",
                "client CPU ms",
                "client cores",
                "PG CPU ms",
                "PG cores",
                "others' cores",
                "PG conns",
            ],
            [
                [
                    row.workers,
                    f"{row.load.rate:.0f}",
                    f"{row.load.rate / base:.2f}" if base else "-",
                    f"{percentile(row.load.latencies, 50) * ms:.1f}",
                    f"{percentile(row.load.latencies, 99) * ms:.1f}",
                    f"{row.load.per_request_ms(row.load.server):.2f}",
                    f"{row.load.cores(row.load.server):.2f}",
                    "+".join(f"{row.load.cores(w):.2f}" for w in row.load.workers),
                    f"{row.load.per_request_ms(row.load.client):.2f}",
                    f"{row.load.cores(row.load.client):.2f}",
                    f"{row.load.per_request_ms(row.load.postgres):.2f}",
                    f"{row.load.cores(row.load.postgres):.2f}",
                    f"{row.load.cores(row.load.others):.2f}",
                    row.load.sessions + row.warmup.sessions,
                ]
                for row in rows
            ],
        )
    )
    print(
        "(server: the gunicorn master and its workers, CPU time per request and cores busy "
        "(CPU s / wall s); per worker: each worker's cores, busiest first; client: this "
        "process, the load generator; PG: the throwaway PostgreSQL (with --db shared, the "
        "shared server, others' load included); others: the rest of the machine's busy time;"
        " PG conns: connections the server opened, warm-up included)"
    )
    print(
        "\nIf the whole machine (2 cores) served this load, CPU per request (server + client "
        "+ PostgreSQL) would allow at most:"
    )
    for row in rows:
        per = row.load.server + row.load.client + row.load.postgres
        cores = psutil.cpu_count() or 1
        ceiling = cores * row.load.requests / per if per else 0.0
        print(
            f"  {row.workers} worker(s): {ceiling:.0f} req/s on {cores} cores "
            f"(measured {row.load.rate:.0f}); with the client's share left out "
            f"{cores * row.load.requests / (row.load.server + row.load.postgres):.0f}"
        )
    ok = True
    print()
    for row in rows:
        called = row.load.requests + row.warmup.requests
        written = sum(row.runs.values())
        completed = row.runs.get("completed", 0)
        statuses = row.load.statuses + row.warmup.statuses
        not_ok = called - statuses[200]
        distinct = len(row.load.run_ids | row.warmup.run_ids)
        print(
            f"{row.workers} worker(s): run rows written {written} (calls {called}, completed "
            f"{completed}, distinct X-Run-Id {distinct}); non-200 responses {not_ok}"
            + ("; A WORKER RESTARTED during a block" if row.load.restarted else "")
        )
        spread = ", ".join("+".join(map(str, c)) for c in row.load.connections)
        print(f"  client connections held by each worker, per block: {spread}")
        for failure in (row.warmup.failures + row.load.failures)[:5]:
            print(f"  failed: {failure}")
        for line in row.problems[:10]:
            print(f"  server log: {line}")
        ok = ok and not_ok == 0 and written == called == completed == distinct
    print(f"every response 200 and one completed run per call: {'yes' if ok else 'NO'}")
    two = next((row for row in rows if row.workers == 2), None)
    if base and two:
        ratio = two.load.rate / base
        print(f"workers: 2 workers {ratio:.2f}x one worker's invoke throughput (goal 1.6x)")
    return ok


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument(
        "--workers", help="worker counts, comma-separated (default 1,2,3,4; --quick: 1,2)"
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--requests", type=int, help="timed invokes per server (default 2000; --quick: 300)"
    )
    parser.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="raw: a minimal HTTP/1.1 client on asyncio streams (default; the cheapest load "
        "generator); httpx: httpx2.AsyncClient, as the other benchmarks",
    )
    parser.add_argument(
        "--close",
        action="store_true",
        help="raw client: a new connection for every request (Connection: close), so each "
        "one goes to whichever worker accepts it then, not to the worker that accepted a "
        "keep-alive connection at the start",
    )
    args = parser.parse_args()
    if args.close and args.client != "raw":
        parser.error("--close is for the raw client")
    require_deploy()
    counts = [int(n) for n in (args.workers or ("1,2" if args.quick else "1,2,3,4")).split(",")]
    total = args.requests or (300 if args.quick else 2000)
    warmup = 64 if args.quick else 200
    print(machine())
    db = prepare(args.db)
    env = {"LLM_OFFLINE": "true"}
    try:
        rows = [Row(n, bench_data(callers=args.concurrency)) for n in counts]
        sizes = {"total": total, "warmup": warmup, "concurrency": args.concurrency}
        asyncio.run(measure(rows, db, env, client=args.client, close=args.close, **sizes))
        for row in rows:
            row.runs = run_counts(row.data.agent_id)
        client = args.client + (", a connection per request" if args.close else "")
        ok = report(rows, client=client, **sizes)
    finally:
        db.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
