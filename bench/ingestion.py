"""Ingestion throughput: documents uploaded through retrieval.services.document_create until
every one is ready, through a real Celery worker and in process (eager).

    .venv/bin/python bench/ingestion.py [--quick] [--db private|shared] [--pool prefork|solo]
                                        [--concurrency N] [--paths celery-noreuse,celery,...]

200 plain-text documents of about 20 chunks (`--quick`: 40), written from the same
vocabulary as bench/retrieval_search.py, embedded by the local embedder (384 dimensions).

- Celery: redis-server on a free loopback port, and `celery -A agentbuilder worker --pool
  prefork --concurrency 2` as a subprocess with DATABASE_URL (the bench database) and
  CELERY_BROKER_URL; this process uploads with the same broker, so `document_create` queues
  `retrieval.ingest_document` on commit. Timed from the first upload until no document is
  pending (polled every 20 ms).
- The same with `CELERY_DB_REUSE_MAX=0` in the worker's environment (the project's
  default is 1000): Celery's Django fixup then closes the worker's connection pool around
  every task, so each task opens new PostgreSQL connections.
- Each path first ingests 4 documents (not counted; the tables are emptied after).
- In process: the same documents with `task_always_eager` (the set-up without a broker),
  twice: with INGESTION_WORKERS=0 each upload ingests in the caller before
  `document_create` returns (the stages of `document_ingest` are timed by wrapping the
  functions it calls); with INGESTION_WORKERS=2 (the default) two threads of this process
  ingest after each commit, timed until `ingestion_wait` returns.

`--paths` runs some of the four (celery-noreuse, celery, caller, threads), in that order.
Both start from empty tables (the bench database's documents and chunks are deleted first).
Prints figures; asserts nothing about time. Exits 1 when a document is not ready.
"""

# A seeded corpus, not secrets: random.Random is what is wanted here.
# ruff: noqa: S311

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    Database,
    arguments,
    free_port,
    machine,
    percentile,
    prepare,
    require,
    stop_process,
    table,
)
from retrieval_search import DEPARTMENTS, DIM, DOC_TYPES, YEARS, chunk_text, vocabulary

PARAGRAPHS = 34  # about 20 chunks of CHUNK_TOKENS=256 with CHUNK_OVERLAP=32
POLL = 0.02
WARM_UP = 4  # documents through each worker before the timed run
PATHS = ("celery-noreuse", "celery", "caller", "threads")


@dataclass(frozen=True)
class Upload:
    title: str
    data: bytes
    doc_type: str
    metadata: dict[str, Any]


def documents(count: int, seed: int) -> list[Upload]:
    vocab = vocabulary()
    rng = random.Random(seed)
    uploads = []
    for number in range(count):
        main, other = rng.sample(range(len(vocab.topics)), 2)
        text = "\n\n".join(chunk_text(rng, vocab, main, other) for _ in range(PARAGRAPHS))
        department = rng.choice(DEPARTMENTS)
        uploads.append(
            Upload(
                title=f"ingest {seed}-{number:04d}",
                data=text.encode(),
                doc_type=rng.choice(DOC_TYPES),
                metadata={"department": department, "year": rng.choice(YEARS)},
            )
        )
    return uploads


# ---------------------------------------------------------------- processes


class Redis:
    """redis-server on a free loopback port, nothing saved, in a temporary directory."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.TemporaryDirectory(prefix="bench-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        command = [
            str(shutil.which("redis-server")),
            *("--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", self.dir.name),
            *("--logfile", str(Path(self.dir.name) / "redis.log")),
        ]
        self.process = subprocess.Popen(command)  # noqa: S603 - our own command line
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis(port=self.port).ping():
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer within 10 s")

    def stop(self) -> None:
        stop_process(self.process)
        self.dir.cleanup()


class Worker:
    """`celery -A agentbuilder worker` with the bench database and the broker."""

    def __init__(
        self, broker: str, *, pool: str, concurrency: int, env: dict[str, str] | None = None
    ) -> None:
        self.command = [
            sys.executable,
            *("-m", "celery", "-A", "agentbuilder", "worker"),
            *("--pool", pool, "--concurrency", str(concurrency)),
            *("--loglevel", "INFO", "--hostname", f"bench-ingest-{os.getpid()}@%h"),
        ]
        self.env = {**os.environ, "CELERY_BROKER_URL": broker, **(env or {})}
        self.log = tempfile.NamedTemporaryFile(prefix="bench-celery-", suffix=".log")  # noqa: SIM115
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> float:
        """Start the worker; the seconds until it answers a ping."""
        from agentbuilder.celery import app

        started = time.perf_counter()
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            self.command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the worker exited with {self.process.returncode}:\n{self.tail()}"
                )
            if app.control.ping(timeout=0.5):
                return time.perf_counter() - started
        raise RuntimeError(f"the worker did not answer within {timeout} s:\n{self.tail()}")

    def cpu_seconds(self) -> float:
        """CPU time of the worker and its pool processes (those alive now)."""
        import psutil

        assert self.process is not None
        parent = psutil.Process(self.process.pid)
        total = 0.0
        for process in [parent, *parent.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                total += times.user + times.system
        return total

    def tail(self, lines: int = 30) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def log_summary(self) -> tuple[Counter[str], list[str]]:
        """Lines by kind (received, succeeded, …) and the problems (WARNING or worse)."""
        import re

        kinds: Counter[str] = Counter()
        problems = []
        for line in Path(self.log.name).read_text(errors="replace").splitlines():
            if match := re.search(r"Task retrieval\.ingest_document\[[^\]]+\] (\w+)", line):
                kinds[match.group(1)] += 1
            elif re.search(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback", line):
                problems.append(re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", line)[:240])
        return kinds, problems

    def stop(self) -> None:
        import psutil

        if self.process is None:
            return
        children = []
        with contextlib.suppress(psutil.NoSuchProcess):
            children = psutil.Process(self.process.pid).children(recursive=True)
        stop_process(self.process, timeout=30)  # SIGTERM: a warm shutdown, the pool processes too
        for child in children:  # only if one outlived its parent
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self.log.close()


def postgres_cpu(db: Database) -> float | None:
    """CPU time of the throwaway server so far: the postmaster, its live processes, and
    those that exited (reaped by the postmaster, so in its children's times). None for
    the shared server, which serves others too."""
    import psutil

    if db.private is None:
        return None
    pid = int((Path(db.private.pgdata) / "postmaster.pid").read_text().split()[0])
    postmaster = psutil.Process(pid)
    own = postmaster.cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for process in postmaster.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def sessions_opened(db: Database) -> int:
    """Connections ever opened to the bench database (PostgreSQL 14+ counts them)."""
    with db.connect() as conn:
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", [db.name]
        ).fetchone()
    return int(row[0]) if row else 0


# ---------------------------------------------------------------- runs


@dataclass
class Run:
    name: str
    documents: int = 0
    chunks: int = 0
    ready: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    upload_seconds: float = 0.0  # the upload loop (eager: with the ingestion in it)
    wall: float = 0.0  # first upload to no document pending
    latencies: list[float] = field(default_factory=list)  # created_at to ingested_at
    cpu: dict[str, float] = field(default_factory=dict)
    sessions: int = 0  # PostgreSQL connections opened during the run
    stages: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def empty_tables() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")  # the bench database


def upload_all(uploads: list[Upload]) -> tuple[list[Any], float, float]:
    """Upload every document; their ids, when the first upload began, the loop's seconds."""
    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import Environment
    from retrieval.services import document_create

    environment = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    ids = []
    started = time.perf_counter()
    for upload in uploads:
        document = document_create(
            environment_id=environment.pk,
            user=None,
            title=upload.title,
            data=upload.data,
            media_type="text/plain",
            source_name=f"{upload.title}.txt",
            doc_type=upload.doc_type,
            metadata=upload.metadata,
        )
        ids.append(document.pk)
    return ids, started, time.perf_counter() - started


def wait_done(ids: list[Any], started: float, timeout: float) -> float:
    from retrieval.models import Document, DocumentStatus

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Document.objects.filter(pk__in=ids, status=DocumentStatus.PENDING).exists():
            return time.perf_counter() - started
        time.sleep(POLL)
    raise RuntimeError(f"documents still pending after {timeout} s")


def outcome(run: Run, ids: list[Any]) -> None:
    from django.db.models import Count

    from retrieval.models import Chunk, Document

    run.documents = len(ids)
    rows = Document.objects.filter(pk__in=ids)
    run.statuses = Counter(dict(rows.values_list("status").annotate(n=Count("id"))))
    run.ready = run.statuses.get("ready", 0)
    run.chunks = Chunk.objects.filter(document_id__in=ids).count()
    run.errors = list(rows.exclude(error="").values_list("error", flat=True)[:5])
    run.latencies = [
        (ingested - created).total_seconds()
        for created, ingested in rows.values_list("created_at", "ingested_at")
        if ingested is not None
    ]


def celery_run(
    db: Database,
    uploads: list[Upload],
    broker: str,
    *,
    pool: str,
    concurrency: int,
    reuse: bool = True,
) -> Run:
    name = f"Celery ({pool}, concurrency {concurrency})"
    env = {}
    if not reuse:
        name += ", CELERY_DB_REUSE_MAX=0"
        env["CELERY_DB_REUSE_MAX"] = "0"
    run = Run(name)
    empty_tables()
    worker = Worker(broker, pool=pool, concurrency=concurrency, env=env)
    try:
        ready_in = worker.start()
        print(f"{name}: the worker answered a ping {ready_in:.1f} s after it was started")
        # Warm-up: each pool process imports what ingestion needs on its first task.
        ids, started, _ = upload_all(uploads[:WARM_UP])
        wait_done(ids, started, timeout=120)
        empty_tables()
        cpu_before, own_before = worker.cpu_seconds(), time.process_time()
        postgres_before, sessions_before = postgres_cpu(db), sessions_opened(db)
        ids, started, run.upload_seconds = upload_all(uploads)
        run.wall = wait_done(ids, started, timeout=600)
        run.cpu = {
            "worker (all its processes)": worker.cpu_seconds() - cpu_before,
            "this process (uploads)": time.process_time() - own_before,
        }
        if postgres_before is not None:
            run.cpu["PostgreSQL"] = (postgres_cpu(db) or 0.0) - postgres_before
        time.sleep(0.5)  # a closed session reaches the statistics when its backend exits
        run.sessions = sessions_opened(db) - sessions_before
        outcome(run, ids)
        kinds, problems = worker.log_summary()
    finally:
        worker.stop()
    print(f"{name}: worker log: tasks {dict(kinds)}")
    for line in problems[:10]:
        print(f"  worker: {line}")
    return run


@contextlib.contextmanager
def eager() -> Iterator[None]:
    from agentbuilder.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


@contextlib.contextmanager
def stage_timers(stages: dict[str, float]) -> Iterator[None]:
    """Time what document_ingest calls, by wrapping the names it looks up."""
    from retrieval import indexing

    def timed(name: str, function: Callable[..., Any], *, listed: bool = False) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = function(*args, **kwargs)
                return list(result) if listed else result
            finally:
                stages[name] = stages.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    originals = {name: getattr(indexing, name) for name in ("extract_pieces", "_embed", "_store")}
    indexing.extract_pieces = timed("extract and split", originals["extract_pieces"])
    indexing._embed = timed("embed (local)", originals["_embed"], listed=True)
    indexing._store = timed("store (delete, insert, indexes, commit)", originals["_store"])
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(indexing, name, function)


def eager_run(db: Database, uploads: list[Upload], *, workers: int = 0) -> Run:
    """Without a broker. `workers` 0: each upload ingests in the caller before
    document_create returns (stages timed); otherwise INGESTION_WORKERS threads of this
    process ingest after each commit, timed until they are all done."""
    from django.conf import settings

    from retrieval.ingestion import ingestion_wait

    name = "in process (caller)" if workers <= 0 else f"in process ({workers} threads)"
    run = Run(name)
    before = settings.INGESTION_WORKERS
    settings.INGESTION_WORKERS = workers
    try:
        with eager():
            upload_all(uploads[:WARM_UP])  # the same warm-up as a worker's
            if not ingestion_wait(timeout=120):
                raise RuntimeError("the warm-up documents were still ingesting after 120 s")
        empty_tables()
        own_before, postgres_before = time.process_time(), postgres_cpu(db)
        sessions_before = sessions_opened(db)
        timers = stage_timers(run.stages) if workers <= 0 else contextlib.nullcontext()
        with eager(), timers:
            ids, started, run.upload_seconds = upload_all(uploads)
            if not ingestion_wait(timeout=600):
                raise RuntimeError("documents still ingesting after 600 s")
            run.wall = time.perf_counter() - started
    finally:
        settings.INGESTION_WORKERS = before
    run.cpu = {"this process": time.process_time() - own_before}
    if postgres_before is not None:
        run.cpu["PostgreSQL"] = (postgres_cpu(db) or 0.0) - postgres_before
    time.sleep(0.5)
    run.sessions = sessions_opened(db) - sessions_before
    outcome(run, ids)
    return run


# ---------------------------------------------------------------- report


def report(runs: list[Run]) -> bool:
    print(
        table(
            [
                "path",
                "documents",
                "ready",
                "chunks",
                "wall s",
                "chunks/s",
                "documents/s",
                "upload loop s",
                "doc latency p50 s",
                "p95",
                "max",
            ],
            [
                [
                    run.name,
                    run.documents,
                    run.ready,
                    run.chunks,
                    f"{run.wall:.2f}",
                    f"{run.chunks / run.wall:.0f}",
                    f"{run.documents / run.wall:.1f}",
                    f"{run.upload_seconds:.2f}",
                    f"{percentile(run.latencies, 50):.2f}",
                    f"{percentile(run.latencies, 95):.2f}",
                    f"{max(run.latencies, default=float('nan')):.2f}",
                ]
                for run in runs
            ],
        )
    )
    print(
        "(wall: first upload to no document pending; doc latency: created_at to ingested_at, "
        "queueing included)"
    )
    for run in runs:
        cpu = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in run.cpu.items())
        print(
            f"{run.name}: CPU {cpu}; PostgreSQL connections opened {run.sessions}; "
            f"statuses {dict(run.statuses)}"
        )
        for error in run.errors:
            print(f"  error: {error}")
        if run.stages:
            total = sum(run.stages.values())
            rows = [
                [name, f"{seconds:.2f}", f"{seconds / run.chunks * 1000:.2f}"]
                for name, seconds in run.stages.items()
            ]
            rows.append(
                [
                    "the rest (document row, task, commit hooks)",
                    f"{run.wall - total:.2f}",
                    f"{(run.wall - total) / run.chunks * 1000:.2f}",
                ]
            )
            print(table([f"  {run.name}: stage", "s", "ms per chunk"], rows))
    return all(run.ready == run.documents for run in runs)


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--pool", choices=("prefork", "solo"), default="prefork")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument(
        "--paths",
        default=",".join(PATHS),
        help=f"which paths to run, comma-separated, of {', '.join(PATHS)} (default: all)",
    )
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if unknown := set(paths) - set(PATHS):
        parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
    require(programs=["redis-server"])
    count = 40 if args.quick else 200
    print(machine())
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_DIM"] = str(DIM)
    redis = Redis()
    redis.start()
    # Before Django reads its settings: uploads queue their task (the app is not eager).
    os.environ["CELERY_BROKER_URL"] = redis.url
    try:
        db = prepare(args.db)
        try:
            return measure(
                db, count, redis.url, pool=args.pool, concurrency=args.concurrency, paths=paths
            )
        finally:
            db.close()
    finally:
        redis.stop()
        print(f"done; {machine()}")


def measure(
    db: Database, count: int, broker: str, *, pool: str, concurrency: int, paths: list[str]
) -> int:
    from django.conf import settings

    uploads = documents(count, seed=1)
    size = sum(len(u.data) for u in uploads) / count
    print(
        f"{count} documents of {PARAGRAPHS} paragraphs ({size / 1000:.1f} kB of text each); "
        f"CHUNK_TOKENS={settings.CHUNK_TOKENS}, CHUNK_OVERLAP={settings.CHUNK_OVERLAP}, "
        f"EMBEDDING_PROVIDER={settings.EMBEDDING_PROVIDER}, EMBEDDING_DIM={settings.EMBEDDING_DIM}"
    )
    runners: dict[str, Callable[[], Run]] = {
        "celery-noreuse": lambda: celery_run(
            db, uploads, broker, pool=pool, concurrency=concurrency, reuse=False
        ),
        "celery": lambda: celery_run(db, uploads, broker, pool=pool, concurrency=concurrency),
        "caller": lambda: eager_run(db, uploads),
        "threads": lambda: eager_run(db, uploads, workers=2),
    }
    runs = [runners[path]() for path in PATHS if path in paths]
    print()
    ok = report(runs)
    print(f"every document ready: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
