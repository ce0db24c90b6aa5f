"""The run events' store and fan-out, compared: PostgreSQL rows read by one poller a
process (today's, agents/runs/event_feed.py), the same rows read on LISTEN/NOTIFY wake-ups,
and Redis streams.

    .venv/bin/python bench/event_fanout.py [--quick] [--runs N]

One writer process stands for the runs: every 0.2 s (the event log's flush,
agents/runs/event_log.py FLUSH_SECONDS) it appends to each of N runs (default 500;
--quick: 100) a batch of 5 events, 10 batches a run, each event stamped with the clock it
was written at. One follower process follows all N runs, as one server process follows
its clients' runs, each variant with one connection:

- `poll`: rows (run, index, event) in a table; every 0.2 s one statement reads every
  followed run's rows past what it has (`unnest` of the runs and their next index);
- `notify`: the same rows, each batch's insert followed by `NOTIFY` with the run's id; the
  follower LISTENs and reads, in one statement, the rows of the runs it was told of;
- `redis`: a stream a run (`XADD` each event, a pipeline a tick); the follower blocks in one
  `XREAD` over all the runs' streams from the last id it has of each.

Prints for each variant: the follower's and the writer's CPU, the store's (PostgreSQL's
backends, or redis-server), each event's delay from its write to its reading (p50, p99),
and whether every run's events arrived once and in order; then each variant's total CPU
against `poll`'s. Two rounds, the first a warm-up; the second's figures are printed.
Loopback only (the database by its socket, Redis on 127.0.0.1). Asserts nothing about
time; exits 1 when a run's events did not arrive exactly.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from common import (
    Database,
    arguments,
    cpu_seconds,
    free_port,
    machine,
    percentile,
    prepare,
    require,
    stop_process,
    table,
)

TICK = 0.2
BATCH = 5
BATCHES = 10
EVENTS = BATCH * BATCHES
VARIANTS = ("poll", "notify", "redis")


@dataclass
class Figures:
    variant: str
    follower_cpu: float
    writer_cpu: float
    store_cpu: float
    delays: list[float]
    exact: int

    @property
    def total(self) -> float:
        return self.follower_cpu + self.writer_cpu + self.store_cpu


def _event(index: int) -> str:
    return json.dumps(
        {"type": "response.output_text.delta", "delta": "x" * 40, "i": index, "at": time.time()}
    )


# ---------------------------------------------------------------- writer (its own process)


INSERT = """
    INSERT INTO fanout_event (run, index, event)
    SELECT %s, %s + e.n - 1, e.event
    FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(event, n)
"""


def write(variant: str, socket_dir: str, dbname: str, redis_port: int, runs: int, go: Any) -> None:
    # Connected before the start, so that the writer's measured CPU is its writing.
    if variant == "redis":
        import redis

        client = redis.Redis(host="127.0.0.1", port=redis_port)
        client.ping()
        go.wait()
        for tick in range(BATCHES):
            started = time.monotonic()
            pipe = client.pipeline(transaction=False)
            for run in range(runs):
                for n in range(BATCH):
                    pipe.xadd(f"run:{run}", {"e": _event(tick * BATCH + n)})
            pipe.execute()
            time.sleep(max(0.0, TICK - (time.monotonic() - started)))
        return
    import psycopg

    with psycopg.connect(host=socket_dir, user="postgres", dbname=dbname, autocommit=True) as conn:
        go.wait()
        for tick in range(BATCHES):
            started = time.monotonic()
            for run in range(runs):
                # One statement a batch, as the event log writes a flush.
                batch = "[" + ",".join(_event(tick * BATCH + n) for n in range(BATCH)) + "]"
                with conn.transaction(), conn.cursor() as cursor:
                    cursor.execute(INSERT, [run, tick * BATCH, batch])
                    if variant == "notify":
                        cursor.execute("SELECT pg_notify('fanout', %s)", [str(run)])
            time.sleep(max(0.0, TICK - (time.monotonic() - started)))


# ---------------------------------------------------------------- follower (this process)

READ = """
    SELECT e.run, e.index, e.event
    FROM unnest(%s::integer[], %s::integer[]) AS f(run, after)
    JOIN fanout_event e ON e.run = f.run AND e.index >= f.after
    ORDER BY e.run, e.index
"""


def follow_pg(conn: Any, runs: int, notified: bool) -> tuple[list[float], dict[int, list[int]]]:
    got: dict[int, list[int]] = {run: [] for run in range(runs)}
    delays: list[float] = []
    if notified:
        conn.execute("LISTEN fanout")
    wanted = set(range(runs))
    while any(len(got[r]) < EVENTS for r in range(runs)):
        if notified:
            # Wait for a wake-up, then take every notice that came with it.
            select.select([conn.fileno()], [], [], 1.0)
            told = {int(n.payload) for n in conn.notifies(timeout=0, stop_after=0)}
            while True:
                more = {int(n.payload) for n in conn.notifies(timeout=0.001)}
                if not more:
                    break
                told |= more
            wanted = told
            if not wanted:
                continue
        else:
            time.sleep(TICK)
            wanted = {r for r in range(runs) if len(got[r]) < EVENTS}
        ids = sorted(wanted)
        rows = conn.execute(READ, [ids, [len(got[r]) for r in ids]]).fetchall()
        now = time.time()
        for run, index, event in rows:
            got[run].append(index)
            delays.append(now - event["at"])
    return delays, got


def follow_redis(port: int, runs: int) -> tuple[list[float], dict[int, list[int]]]:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    last = {f"run:{r}": "0-0" for r in range(runs)}
    got: dict[int, list[int]] = {run: [] for run in range(runs)}
    delays: list[float] = []
    while any(len(got[r]) < EVENTS for r in range(runs)):
        open_streams = {k: v for k, v in last.items() if len(got[int(k[4:])]) < EVENTS}
        reply: Any = client.xread(open_streams, block=1000)  # type: ignore[arg-type]
        for stream, entries in reply or []:
            now = time.time()
            name = stream.decode()
            for entry_id, fields in entries:
                event = json.loads(fields[b"e"])
                got[int(name[4:])].append(event["i"])
                delays.append(now - event["at"])
                last[name] = entry_id.decode()
    return delays, got


# ---------------------------------------------------------------- a variant


def store_cpu(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        # A backend gone meanwhile: its time is lost (ours stay open while measured).
        with contextlib.suppress(psutil.NoSuchProcess):
            total += cpu_seconds(pid)
    return total


def backends(db: Database, dbname: str) -> list[int]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [dbname],
        ).fetchall()
    return [row[0] for row in rows]


def measure(
    variant: str, db: Database, dbname: str, redis: Any, redis_port: int, runs: int
) -> Figures:
    import psutil

    with db.connect(dbname) as conn:
        conn.execute("TRUNCATE fanout_event")
    if variant == "redis":
        import redis as redis_py

        redis_py.Redis(host="127.0.0.1", port=redis_port).flushall()
    go = multiprocessing.Event()
    writer = multiprocessing.Process(
        target=write, args=(variant, db.socket_dir, dbname, redis_port, runs, go)
    )
    writer.start()
    with db.connect(dbname) as conn:
        # Measured once the writer is connected: its backend and the follower's.
        store = [redis.pid]
        while variant != "redis" and len(store := backends(db, dbname)) < 2:
            time.sleep(0.05)
        time.sleep(0.5)
        before_store = store_cpu(store)
        before_self = psutil.Process().cpu_times()
        before_writer = cpu_seconds(writer.pid or 0)
        go.set()
        if variant == "redis":
            delays, got = follow_redis(redis_port, runs)
        else:
            delays, got = follow_pg(conn, runs, notified=variant == "notify")
        after_self = psutil.Process().cpu_times()
        writer_cpu = cpu_seconds(writer.pid or 0) - before_writer
        spent_store = store_cpu(store) - before_store
    writer.join()
    exact = sum(1 for indexes in got.values() if indexes == list(range(EVENTS)))
    follower = (after_self.user + after_self.system) - (before_self.user + before_self.system)
    return Figures(variant, follower, writer_cpu, spent_store, delays, exact)


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    require(programs=["redis-server"])
    runs = args.runs or (100 if args.quick else 500)
    print(machine())
    db = prepare(args.db)
    dbname = "fanout_bench"
    port = free_port()
    redis = subprocess.Popen(  # noqa: S603 - a fixed command line, loopback only
        [
            str(shutil.which("redis-server")),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        with db.connect() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {dbname}")
            conn.execute(f"CREATE DATABASE {dbname}")
        with db.connect(dbname) as conn:
            conn.execute(
                "CREATE TABLE fanout_event (run integer, index integer, event jsonb, "
                "PRIMARY KEY (run, index))"
            )
        time.sleep(0.5)  # redis-server listening
        # A first round warms every side (imports, caches, the table's pages); the second
        # is reported.
        for _ in range(2):
            figures = [measure(v, db, dbname, redis, port, runs) for v in VARIANTS]
    finally:
        stop_process(redis)
        db.close()
    base = figures[0]
    rows = [
        [
            f.variant,
            runs,
            f.exact,
            f"{f.follower_cpu:.2f}",
            f"{f.writer_cpu:.2f}",
            f"{f.store_cpu:.2f}",
            f"{f.total:.2f}",
            f"{f.total / base.total:.2f}",
            f"{percentile(f.delays, 50) * 1000:.0f}",
            f"{percentile(f.delays, 99) * 1000:.0f}",
        ]
        for f in figures
    ]
    print(f"\n{runs} runs x {EVENTS} events ({BATCH} every {TICK} s), one follower process")
    print(
        table(
            [
                "variant",
                "runs",
                "exact",
                "follower CPU s",
                "writer CPU s",
                "store CPU s",
                "total CPU s",
                "total / poll",
                "delay p50 ms",
                "delay p99 ms",
            ],
            rows,
        )
    )
    print(f"done; {machine()}")
    print(
        "event fanout: "
        + ", ".join(
            f"{f.variant} {f.total / base.total:.2f}x CPU p99 "
            f"{percentile(f.delays, 99) * 1000:.0f} ms"
            for f in figures
        )
    )
    return 0 if all(f.exact == runs for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
