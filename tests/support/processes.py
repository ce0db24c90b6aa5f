"""Real processes a test starts on loopback: a free port, Redis, a Celery worker, Celery
beat, and a stop that waits for the process to end."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.live import database_url

ROOT = Path(__file__).resolve().parents[2]
# Waits for a condition, over as soon as it holds: generous, for a busy 2-core machine
# (a worker process imports Django before its first task).
STARTUP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def start_redis(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    redis = subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
        [
            str(shutil.which("redis-server")),
            *("--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
            *("--dir", str(workdir)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if redis.poll() is not None:
            raise RuntimeError(f"redis-server exited with {redis.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return redis
        except OSError:
            time.sleep(0.05)
    stop(redis)
    raise RuntimeError(f"redis-server did not answer on port {port}")


def start_worker(
    broker_url: str,
    log: Path,
    pool: str = "solo",
    concurrency: int = 1,
    name: str = "ingest-test",
    **env: str,
) -> subprocess.Popen[bytes]:
    """A `celery worker` on this test's database; `env` adds to its environment; `name`
    tells two workers of one test apart."""
    return _celery(
        broker_url,
        log,
        [
            "worker",
            *("--pool", pool, "--concurrency", str(concurrency), "-Q", "celery"),
            *("--hostname", f"{name}-{os.getpid()}@%h", "--loglevel", "INFO"),
            *("--without-gossip", "--without-mingle", "--without-heartbeat"),
        ],
        env,
    )


def start_beat(broker_url: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """`celery beat` on this test's database, with the scheduler the settings name, as a
    deployment runs it; `env` adds to its environment. Its log has a line for each pass of
    its loop (`beat: Waking up`) and each task it sends (`Sending due task`)."""
    return _celery(broker_url, log, ["beat", "--loglevel", "DEBUG"], env)


def _celery(
    broker_url: str, log: Path, arguments: list[str], env: dict[str, str]
) -> subprocess.Popen[bytes]:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "CELERY_BROKER_URL": broker_url,
        "DATABASE_URL": database_url(connection.settings_dict),
        # A worker's threads that use the database: its tasks', the liveness thread's, the
        # delivery passes' (agents.webhooks.dispatch), the cancel watcher's; with 2, a real
        # worker's run was seen waiting out the pool's timeout.
        "DB_POOL_MAX_SIZE": "4",
        "EMBEDDING_PROVIDER": settings.EMBEDDING_PROVIDER,
        "EMBEDDING_DIM": str(settings.EMBEDDING_DIM),
        "CHUNK_TOKENS": str(settings.CHUNK_TOKENS),
        "CHUNK_OVERLAP": str(settings.CHUNK_OVERLAP),
        **env,
    }
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
            [
                sys.executable,
                *("-m", "celery", "-A", "agentbuilder", *arguments),
            ],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
