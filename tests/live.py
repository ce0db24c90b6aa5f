"""Real HTTP servers for tests, on loopback: an ASGI app served by uvicorn from a thread, or
the platform in a uvicorn process of its own.

A module of live-server tests imports the fixtures it uses (as tests/browser.py's); each is
named for what it gives, and registers under the name tests ask for (`port`, `model`, ...),
so that a test's parameter does not shadow the import:

    from tests.live import platform_port  # noqa: F401 (the fixture `port`)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import uvicorn
from django.core.asgi import get_asgi_application
from django.db import DEFAULT_DB_ALIAS, connections

from agentbuilder import liveness
from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.models import Agent
from tests.fakes.openai import FakeOpenAI

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


# Fixtures named `port`: one uvicorn for a module of transactional, serialized-rollback
# tests (the server's threads see committed rows only; `reseed_after_module` puts the
# seeded rows back after the module's last flush).


@pytest.fixture(scope="module", name="port")
def django_port(reseed_after_module: None) -> Iterator[int]:
    """Django's own ASGI handler, served for the module: its port."""
    with live_app(get_asgi_application()) as served:
        yield served.port


@pytest.fixture(scope="module", name="port")
def platform_port(reseed_after_module: None) -> Iterator[int]:
    """The project's ASGI app as `make run` serves it (agentbuilder.asgi: /v1/mcp, bodies
    read before Django, request threads), served for the module: its port."""
    # Imported here, not by every test session: the import connects the app's liveness
    # start to this process's requests.
    from agentbuilder.asgi import application

    with live_app(application) as served:
        yield served.port


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

    def __init__(
        self,
        log: Path,
        *,
        listener: socket.socket | None = None,
        uvicorn_args: tuple[str, ...] = (),
        **env: str,
    ) -> None:
        """`listener`: a listening socket this server shares (`--fd`) with others, as
        servers behind one port do; else a port of its own. `uvicorn_args` add to its
        command line."""
        self.log = log
        if listener is not None:
            self.port: int = listener.getsockname()[1]
            where = ("--fd", str(listener.fileno()))
        else:
            with socket.socket() as probe:  # a free port; uvicorn binds it a moment later
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
            where = ("--host", "127.0.0.1", "--port", str(self.port))
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
                    *("-m", "uvicorn", "agentbuilder.asgi:application", *where),
                    *("--lifespan", "on", "--no-access-log", "--log-level", "warning"),
                    *("--loop", "uvloop", "--http", "agentbuilder.serving:HttpToolsProtocol"),
                    *uvicorn_args,
                ],
                pass_fds=() if listener is None else (listener.fileno(),),
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


# ---------------------------------------------------------------- server processes on a fake model

MODEL = "openai/gpt-4o-mini"  # the catalog's model that the fake OpenAI server answers for


def server_on(model: FakeOpenAI, log: Path, **env: str) -> AbstractContextManager[ServerProcess]:
    """A server process whose OpenAI-compatible model is `model` (named here: another
    module's fake may be the one the environment names), LLM_OFFLINE off."""
    fake = {"LLM_OFFLINE": "false", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    return server_process(log, **{**fake, **env})


@pytest.fixture
def not_sweeping_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servers under test sweep; this process, which may run a liveness thread of its
    own (a test imported agentbuilder.asgi), must not do it for them."""
    monkeypatch.setattr(liveness, "_kinds", {})


@pytest.fixture(name="model")
def fake_model(openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The fake OpenAI server of tests/support/backends.py (`openai_server`, which the
    module must reach), reset before and after the test."""
    openai_server.reset()
    yield openai_server
    openai_server.reset()


@pytest.fixture(name="counter")
def counter_agent(make_agent: Callable[..., Agent]) -> Agent:
    """The Calculator on the fake model, named Counter."""
    return make_agent("Counter", "tool", config={**CALCULATOR["config"], "llmModelId": MODEL})


@pytest.fixture(name="token")
def owner_token(owner: Any) -> str:
    """A Bearer token of the owner."""
    return token_encode(user_id=owner.pk, environment_id=None)[0]
