"""Real HTTP servers for tests, on loopback: an ASGI app served by uvicorn from a thread, or
the platform in a uvicorn process of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn
from django.db import DEFAULT_DB_ALIAS, connections

ROOT = Path(__file__).resolve().parent.parent
# Generous: a process importing Django on a busy 2-core machine takes many seconds.
PROCESS_STARTUP_SECONDS = 120


class LiveApp:
    """An ASGI app on 127.0.0.1 at a free port, until `stop`."""

    def __init__(self, app: Any, **options: Any) -> None:
        # Bound here and handed over, so no other process can take the port in between.
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        settings = {"lifespan": "off", "log_level": "warning", "access_log": False, **options}
        config = uvicorn.Config(app, **settings)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="uvicorn", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 60  # returns when it holds; the margin is a busy machine's
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn did not start"
            assert time.monotonic() < deadline, "uvicorn did not start in time"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = self.server.force_exit = True
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "uvicorn did not stop"


@contextmanager
def live_app(app: Any, **options: Any) -> Iterator[LiveApp]:
    served = LiveApp(app, **options)
    try:
        yield served
    finally:
        served.stop()


def restore_serialized_rows(django_db_blocker: Any) -> None:
    """Put back the rows a serialized-rollback test's last flush removed (the seeds), for
    the test files that run after a module of live-server tests."""
    db = connections[DEFAULT_DB_ALIAS]
    contents = getattr(db, "_test_serialized_contents", None)
    if contents is None:  # no serialized-rollback test was selected: nothing was flushed
        return
    with django_db_blocker.unblock():
        db.creation.deserialize_db_from_string(contents)
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()  # the restored rows' ids, not the flushed ones'


# ---------------------------------------------------------------- a server process


def database_url(db: dict[str, Any]) -> str:
    """DATABASE_URL for a database of this process (the test database, during tests), as
    django-environ reads it back: a unix socket directory goes in the path
    (postgres://user@//run/pg/name)."""
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    name = quote(db["NAME"], safe="")
    host = db["HOST"] or ""
    if host.startswith("/"):
        return f"postgres://{credentials}@/{host}/{name}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{name}"


class ServerProcess:
    """`python -m uvicorn agentbuilder.asgi:application` on 127.0.0.1, on this process's
    test database, as `make run` serves it (lifespan on): a real process a test can
    kill -9. `env` adds to (or overrides) the environment; its output goes to `log`."""

    def __init__(self, log: Path, **env: str) -> None:
        self.log = log
        with socket.socket() as probe:  # a free port; uvicorn binds it a moment later
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": database_url(connections[DEFAULT_DB_ALIAS].settings_dict),
            "DB_POOL_MAX_SIZE": "4",
            "PYTHONUNBUFFERED": "1",
            "LIVENESS_THREAD": "true",
            **env,
        }
        with log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
                [
                    sys.executable,
                    *("-m", "uvicorn", "agentbuilder.asgi:application"),
                    *("--host", "127.0.0.1", "--port", str(self.port)),
                    *("--lifespan", "on", "--no-access-log", "--log-level", "warning"),
                ],
                cwd=ROOT,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self._wait_until_serving()

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + PROCESS_STARTUP_SECONDS
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the server exited:\n{self.output()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise AssertionError(f"the server did not listen in time:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL: no shutdown, no clean-up, as the OOM killer or a lost host ends it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def server_process(log: Path, **env: str) -> Iterator[ServerProcess]:
    served = ServerProcess(log, **env)
    try:
        yield served
    finally:
        served.stop()
