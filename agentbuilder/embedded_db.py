"""The embedded PostgreSQL (with pgvector) used when DATABASE_URL is unset.

`pgserver` ships PostgreSQL 16 with the vector extension as a wheel, so a fresh machine
needs no database installed by hand. The server keeps running after the process that
started it exits (`cleanup_mode=None`): uvicorn, the Celery worker, `manage.py` and the
test workers all share one server under `./var/pgdata`, reached over its unix socket.
`python -m agentbuilder.embedded_db stop var/pgdata` (`make clean-db`) stops it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

DATABASE_NAME = "agentbuilder"

# glibc's allocator, for the server's processes (set where the server starts: here, in
# docker/compose.yaml, and for bench/'s throwaway servers). pgvector's HNSW insert copies
# a few MB of index elements into a memory context it drops after each row; with glibc's
# defaults the freed memory goes back to the kernel (trimmed, or unmapped) and the next
# row faults every page in again: 40 % of PostgreSQL's CPU when ingesting with the index
# of m = 32. Kept instead, an insert takes half the time (bench/README.md, ingestion.py).
SERVER_MALLOC_ENV = {
    "MALLOC_TOP_PAD_": str(64 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
}


def database_settings(pgdata: Path) -> dict[str, Any]:
    """Start (or reuse) the embedded server and return a Django DATABASES entry for it."""
    socket_dir = _start(pgdata)
    _ensure_database(socket_dir, DATABASE_NAME)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": socket_dir,
        "PORT": "",
    }


def _start(pgdata: Path) -> str:
    # platformdirs warns that XDG_RUNTIME_DIR is unset on servers; pgserver only uses it
    # for its lock file, and the fallback under /tmp is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "DATABASE_URL is unset and the embedded database needs the 'pgserver' "
                "package: pip install -r requirements.txt"
            ) from exc
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        with server_environment():
            server = pgserver.get_server(pgdata, cleanup_mode=None)
    host = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    return host


@contextlib.contextmanager
def server_environment() -> Iterator[None]:
    """SERVER_MALLOC_ENV in os.environ while a server is started from this process (the
    server inherits it; the caller's own allocator has read its settings already). A
    value set in the environment already stands."""
    added = {name: value for name, value in SERVER_MALLOC_ENV.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _ensure_database(socket_dir: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=socket_dir, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            logger.info("creating database %s on the embedded server", name)
            # Another process (a second test worker) may create it first.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


class InUse(Exception):
    """The embedded server still has users: processes that started or reused it and run."""


def stop(pgdata: Path) -> str:
    """Stop the embedded server under `pgdata`, whatever became of the processes that used
    it, and say what was done. Raises InUse while one of them still runs.

    pgserver lists the processes using a server in `.handle_pids.json` and stops it only
    when the last one leaves, at its exit. A process ended by a signal never leaves (uvicorn
    re-raises the SIGTERM it shut down on, which skips atexit), so a `make run` ended with
    SIGTERM would keep the server up for good: the pids that no longer run are dropped here.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs, as in _start
        from pgserver import _commands
        from pgserver.postgres_server import PostgresServer
        from pgserver.utils import DiskList, PostmasterInfo

    pgdata = pgdata.resolve()
    if not (pgdata / "PG_VERSION").exists():
        return f"no embedded database at {pgdata}"
    # pgserver's own lock: no process registers or starts the server in between.
    with PostgresServer._lock:
        handles = DiskList(pgdata / ".handle_pids.json")
        users = [pid for pid in handles.get() if _running(pid)]
        handles.put(users)
        if users:
            raise InUse(
                f"the embedded database at {pgdata} is in use by "
                + ", ".join(_describe(pid) for pid in users)
                + "; stop those first"
            )
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return f"the embedded database at {pgdata} is not running"
        # As root pgserver runs PostgreSQL as its own user, and pg_ctl refuses root.
        user = "pgserver" if os.geteuid() == 0 else None
        _commands.pg_ctl(["-w", "stop"], pgdata=pgdata, user=user)  # type: ignore[attr-defined]
    return f"stopped the embedded database at {pgdata}"


def _running(pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _describe(pid: int) -> str:
    import psutil

    try:
        command = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        command = "?"
    return f"pid {pid} ({command[:100]})"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "stop":
        print("usage: python -m agentbuilder.embedded_db stop PGDATA", file=sys.stderr)
        return 2
    try:
        print(stop(Path(argv[1])))
    except InUse as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
