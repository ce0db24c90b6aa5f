"""What both benchmarks share: the bench database, its data, the server subprocess, figures.

Everything runs against a database of its own (`bench_agentbuilder`), on the project's
embedded server or on a throwaway one, so a benchmark never touches the dev database or a
test run's. The platform is a real uvicorn process; the benchmark process drives it over
HTTP and watches it from outside.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# ---------------------------------------------------------------- what a benchmark needs

# Programs a benchmark starts besides Python, and how to install each.
INSTALL = {"redis-server": "apt-get install redis-server"}


def require(*, programs: Sequence[str] = ()) -> None:
    """Exit with status 2, one line per missing need saying how to install it, before the
    benchmark starts anything: the packages of requirements.txt, then `programs`."""
    script = f"bench/{Path(sys.argv[0]).name}"
    problems = []
    missing = _missing_packages()
    if missing:
        named = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if missing[4:] else "")
        problems.append(
            f"{script} needs the project's Python packages (missing: {named}): "
            f"run it with .venv/bin/python (`make setup` makes .venv), "
            f"or pip install -r requirements.txt"
        )
    for program in programs:
        if shutil.which(program) is None:
            problems.append(f"{script} needs {program}: {INSTALL.get(program, program)}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(2)


def _missing_packages() -> list[str]:
    from importlib import metadata

    missing = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name = re.split(r"[\s\[=<>!~;#]", line.strip(), maxsplit=1)[0]
        if name:
            try:
                metadata.version(name)
            except metadata.PackageNotFoundError:
                missing.append(name)
    return missing


# Before any benchmark imports a package of its own (each imports this module first).
require()

BENCH_DB = "bench_agentbuilder"
SHARED_PGDATA = ROOT / "var" / "pgdata"
CALLER_PREFIX = "bench-caller-"

# The invoke body of invoke_overhead.py and workers.py: the offline model echoes it.
INVOKE_REQUEST: dict[str, Any] = {
    "messages": [{"role": "user", "content": "Say hello to the benchmark."}]
}

# One function tool: every model request carries its schema, the model answers with text.
ONE_TOOL_CONFIG: dict[str, Any] = {
    "tools": [
        {
            "toolType": "function",
            "name": "multiply",
            "description": "Multiplies two numbers",
            "funcName": "multiply",
        }
    ],
    "llmModelId": "openai/gpt-4o-mini",
    "systemPrompt": "You are a helpful assistant with access to various tools.",
}


def arguments(description: str, *, db: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a smaller run (under 30 s)")
    parser.add_argument(
        "--db",
        choices=("shared", "private"),
        default=db,
        help=f"shared: database {BENCH_DB} on the project's embedded server (var/pgdata); "
        f"private: a throwaway embedded server, deleted at the end (default: {db})",
    )
    return parser


# ---------------------------------------------------------------- database


@dataclass
class Database:
    socket_dir: str
    name: str
    private: Any = None  # the pgserver handle of a throwaway server

    @property
    def url(self) -> str:
        return f"postgres://postgres@/{self.name}?host={self.socket_dir}"

    def connect(self, dbname: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(
            host=self.socket_dir, user="postgres", dbname=dbname, autocommit=True
        )

    def close(self) -> None:
        if self.private is not None:
            self.private.cleanup()


def prepare(where: str) -> Database:
    """Environment for the project's settings, the bench database migrated, Django set up."""
    from psycopg import sql

    os.environ["DJANGO_SETTINGS_MODULE"] = "agentbuilder.settings"
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", f"bench-{secrets.token_hex(16)}")
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
    os.environ["LOG_LEVEL"] = "WARNING"
    db = _private() if where == "private" else _shared()
    try:
        with db.connect() as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db.name])
            if exists.fetchone() is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db.name)))
        os.environ["DATABASE_URL"] = db.url
        migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
        subprocess.run(migrate, cwd=ROOT, check=True)  # noqa: S603 - our own command line
        import django

        django.setup()
    except BaseException:
        db.close()
        raise
    return db


def _shared() -> Database:
    from agentbuilder.embedded_db import database_settings

    return Database(database_settings(SHARED_PGDATA)["HOST"], BENCH_DB)


def _private() -> Database:
    from urllib.parse import parse_qs, urlparse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs' warning, as in embedded_db
        import pgserver

        from agentbuilder.embedded_db import server_environment

        pgdata = tempfile.mkdtemp(prefix="bench-pgdata-")
        # As the project starts its servers (embedded_db.SERVER_MALLOC_ENV), unless
        # BENCH_PG_MALLOC=default: glibc's defaults, to measure what the setting buys.
        tuned = os.environ.get("BENCH_PG_MALLOC", "tuned") != "default"
        with server_environment() if tuned else contextlib.nullcontext():
            server = pgserver.get_server(pgdata, cleanup_mode="delete")
            socket_dir = parse_qs(urlparse(server.get_uri()).query)["host"][0]
            database = Database(socket_dir, BENCH_DB, private=server)
            _configure(database, server)  # a restart, with the same environment
    return database


def _configure(database: Database, server: Any) -> None:
    """BENCH_PG_SETTINGS ("shared_buffers=1GB,work_mem=64MB"): server settings for the
    throwaway server, set with ALTER SYSTEM and a restart, to measure what tuning buys."""
    wanted: list[tuple[str, str]] = []
    for item in os.environ.get("BENCH_PG_SETTINGS", "").split(","):
        name, _, value = item.partition("=")
        if name.strip():
            wanted.append((name.strip(), value.strip()))
    if not wanted:
        return
    # pgserver's own pg_ctl (made at import time, so unknown to mypy): it has no restart.
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    with database.connect() as conn:
        for name, value in wanted:
            if not re.fullmatch(r"[a-z_]+", name):
                raise SystemExit(f"BENCH_PG_SETTINGS: bad setting name {name!r}")
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")  # the operator's own input
    pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user)
    with database.connect() as conn:
        for name, _ in wanted:
            print(f"server setting {name} = {conn.execute(f'SHOW {name}').fetchone()[0]}")


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class BenchData:
    agent_id: str
    tokens: list[str]


def bench_data(*, callers: int, config: dict[str, Any] = ONE_TOOL_CONFIG) -> BenchData:
    """A fresh one-tool agent and `callers` users who may invoke it, each with a token.

    Several callers rather than one: DRF's per-user throttle keeps each caller's request
    history, and one caller would both reach its rate and make that history long.
    """
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.access.permissions import Action, grant
    from agents.access.tokens import token_encode
    from agents.models import Environment
    from agents.services.agents import agent_create

    users = get_user_model()
    env = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    admin, _ = users.objects.get_or_create(
        username="bench-admin", defaults={"is_superuser": True, "is_staff": True}
    )
    agent, _ = agent_create(
        user=admin,
        environment=env,
        name=f"bench-{secrets.token_hex(4)}",
        agent_type="tool",
        config=config,
    )
    tokens = []
    for number in range(callers):
        user, created = users.objects.get_or_create(username=f"{CALLER_PREFIX}{number}")
        if created:
            grant(user, Action.READ, env)
            grant(user, Action.INVOKE, env)
        tokens.append(token_encode(user_id=user.pk, environment_id=None)[0])
    connection.close()  # not one of the connections the benchmark counts
    return BenchData(str(agent.pk), tokens)


def run_counts(agent_id: str) -> dict[str, int]:
    """The agent's run rows by status (not the rows bench/urls.py's floor writes)."""
    from django.db import connection
    from django.db.models import Count

    from agents.models import Run

    runs = Run.objects.filter(agent_id=agent_id).exclude(protocol="bench-floor")
    rows = runs.values_list("status").annotate(n=Count("id"))
    counts = {status: n for status, n in rows}
    connection.close()
    return counts


# ---------------------------------------------------------------- server


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """`uvicorn agentbuilder.asgi:application`, one process, on a free loopback port."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.env = {**os.environ, **(env or {})}
        self.log = tempfile.NamedTemporaryFile(prefix="bench-uvicorn-", suffix=".log")  # noqa: SIM115
        self.log_start = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    # 30 s was too short for a start on the 2-core machine while other sessions load it.
    def start(self, timeout: float = 120.0) -> None:
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "agentbuilder.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-access-log",
            "--log-level",
            "warning",
            "--timeout-graceful-shutdown",
            "5",
        ]
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        import httpx2 as httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {self.process.returncode}:\n{self.tail()}")
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"{self.url}/v1/models", timeout=2)
                self.log_start = Path(self.log.name).stat().st_size  # past the probe's 401
                return
            time.sleep(0.1)
        raise RuntimeError(f"uvicorn did not answer within {timeout} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def problems(self) -> list[str]:
        """The server's log since it was ready: at level WARNING every line is a problem."""
        with open(self.log.name, "rb") as log:
            log.seek(self.log_start)
            text = log.read().decode(errors="replace")
        return [line for line in text.splitlines() if line]

    def problem_summary(self) -> list[str]:
        """The log's own lines (tracebacks' frames left out), ids masked, counted."""
        frames = ("Traceback", "The above exception", "During handling")
        counted: Counter[str] = Counter(
            re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", line)[:240]
            for line in self.problems()
            if not line[:1].isspace() and not line.startswith(frames)
        )
        return [f"{n} x {line}" for line, n in counted.most_common()]

    def stop(self) -> None:
        stop_process(self.process, timeout=15)

    def close(self) -> None:
        self.stop()
        self.log.close()


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    try:
        server.start()
        yield server
    finally:
        server.close()


def postgres_cpu() -> float:
    """User plus system CPU time so far of every PostgreSQL process on the machine (run
    nothing else against it while measuring)."""
    import psutil

    total = 0.0
    for process in psutil.process_iter(["name"]):
        if process.info["name"] in ("postgres", "postmaster"):
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                continue
    return total


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def tree_cpu(pid: int) -> float:
    """User plus system CPU time so far of a process and its live children (a prefork
    worker's pool); 0 for one that has exited."""
    import psutil

    try:
        parent = psutil.Process(pid)
        return cpu_seconds(pid) + sum(
            c.cpu_times().user + c.cpu_times().system for c in parent.children(recursive=True)
        )
    except psutil.Error:
        return 0.0


def server_postgres_cpu(db: Database) -> float:
    """CPU time so far of the PostgreSQL server the bench database is on, and of it alone
    (not every postgres process on the machine, as `postgres_cpu`): the postmaster, its
    live processes and those that exited (reaped by the postmaster, so in its children's
    times). With --db shared, the shared server's, which serves the worktree's tests too."""
    import psutil

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


# ---------------------------------------------------------------- figures


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> str:
    import platform

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    python = platform.python_version()
    return f"{platform.node()}: {os.cpu_count()} cores, Python {python}, load average {load}"


def stop_process(process: subprocess.Popen[Any] | None, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `timeout` seconds."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_sse_fake(*options: str) -> tuple[subprocess.Popen[str], str]:
    """bench/sse_fake.py in a process of its own, and its URL (it prints its port)."""
    script = str(Path(__file__).with_name("sse_fake.py"))
    fake = subprocess.Popen([sys.executable, script, *options], stdout=subprocess.PIPE, text=True)  # noqa: S603
    assert fake.stdout is not None
    port = int(fake.stdout.readline().split()[1])
    return fake, f"http://127.0.0.1:{port}"


# ---------------------------------------------------------------- Redis and Celery workers


def start_redis() -> tuple[subprocess.Popen[bytes], str, str]:
    """`redis-server` on a free loopback port, answering PING: the process, its URL and its
    working directory (the caller deletes it)."""
    import socket

    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    port = free_port()
    redis = subprocess.Popen(  # noqa: S603 - a fixed argument list
        [
            str(shutil.which("redis-server")),
            *("--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30  # generous, for a busy machine
    while time.monotonic() < deadline:
        if redis.poll() is not None:
            raise RuntimeError(f"redis-server exited with {redis.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return redis, f"redis://127.0.0.1:{port}/0", workdir
        except OSError:
            time.sleep(0.05)
    stop_process(redis)
    raise RuntimeError(f"redis-server did not answer on port {port}")


def start_worker(
    n: int, env: dict[str, str], pool: str, concurrency: int, *options: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """`celery -A agentbuilder worker` number `n` (hostname `bench-<n>@<host>`) with `env`,
    and its log file (the caller deletes it). `options`: more of the worker's options."""
    log = Path(tempfile.mkstemp(prefix=f"bench-worker-{n}-", suffix=".log")[1])
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own command line
            [
                sys.executable,
                *("-m", "celery", "-A", "agentbuilder", "worker"),
                *("--pool", pool, "--concurrency", str(concurrency), "-Q", "celery"),
                *("--hostname", f"bench-{n}@%h", "--loglevel", "WARNING"),
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
                *options,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, log
