"""Real HTTP servers for tests: an ASGI app served by uvicorn from a thread, on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from django.db import DEFAULT_DB_ALIAS, connections


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
        deadline = time.monotonic() + 10
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
    with django_db_blocker.unblock():
        db.creation.deserialize_db_from_string(db._test_serialized_contents)
