"""`make run` and `make clean-db` as a newcomer runs them.

`make run` is the Makefile's own recipe (migrate, devsetup,
collectstatic, uvicorn), with what the README tells them to export reaching the server. With
LLM_OFFLINE=false a Bedrock model id goes to AWS_ENDPOINT_URL_BEDROCK_RUNTIME and an
`openai/…` one to OPENAI_BASE_URL, here the fake servers of tests/fakes on loopback.

The server runs on this test's database (DATABASE_URL) and a VAR_DIR of its own, so it
shares nothing with ./var; the install step is left out (`make -o .venv/.installed`): the
interpreter running the tests has the requirements already.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connection

from tests.factories import CALCULATOR_CONFIG
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import database_url
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 180  # migrate, devsetup and collectstatic first, on a busy 2-core machine
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"  # the Calculator example's model
# What would steer the server elsewhere than this test says: the test run's own settings
# (tests/settings.py puts DEBUG, LLM_OFFLINE and SECRET_KEY in os.environ), a parent make,
# the machine's AWS set-up.
NOT_INHERITED = (
    "DJANGO_SETTINGS_MODULE",
    "DEBUG",
    "LLM_OFFLINE",
    "SECRET_KEY",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL",
    "AWS_DEFAULT_REGION",
)


def make(*args: str, env: dict[str, str], **options: Any) -> subprocess.Popen[bytes]:
    """`make ARGS` in the repository with this interpreter's bin/ as the Makefile's BIN."""
    command = ["make", "--no-print-directory", f"BIN={Path(sys.executable).parent}", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, **options)  # noqa: S603


def newcomer_environment(home: Path) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    environment.update(
        DATABASE_URL=database_url(connection.settings_dict),
        VAR_DIR=str(home / "var"),
        DB_POOL_MAX_SIZE="2",
        AWS_CONFIG_FILE=str(home / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
    )
    return environment


@dataclass
class Served:
    url: str
    admin_password: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def call(self, method: str, path: str, body: Any = None, token: str = "") -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if isinstance(body, str):
            data, headers["Content-Type"] = body.encode(), "application/x-www-form-urlencoded"
        elif body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        request = urllib.request.Request(self.url + path, data, headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{method} {path}: {exc.code} {exc.read()[:500]!r}\n{self.tail()}")

    def token(self) -> str:
        form = urlencode(
            {"grant_type": "password", "username": "admin", "password": self.admin_password}
        )
        return str(self.call("POST", "/v1/auth/token", form)["access_token"])


def wait_until_serving(served: Served) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            pytest.fail(f"make run exited with {served.process.returncode}:\n{served.tail()}")
        try:
            with urllib.request.urlopen(served.url + "/v1/docs", timeout=2):  # noqa: S310
                return
        except urllib.error.HTTPError:
            return  # an answer: it serves
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"nothing answered on {served.url} after {STARTUP_SECONDS}s:\n{served.tail()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """make and the uvicorn it exec'd: the session started for them."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.fixture
def fakes() -> Iterator[tuple[FakeBedrock, FakeOpenAI]]:
    with FakeBedrock() as bedrock, FakeOpenAI() as openai:
        yield bedrock, openai


@pytest.fixture
def served(tmp_path: Path, fakes: tuple[FakeBedrock, FakeOpenAI]) -> Iterator[Served]:
    bedrock, openai = fakes
    port = free_port()
    password = secrets.token_hex(8)
    environment = newcomer_environment(tmp_path)
    # What the README tells a user to export to use real models, DEBUG left to make.
    environment.update(
        LLM_OFFLINE="false",
        PORT=str(port),
        HOST="127.0.0.1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL_BEDROCK_RUNTIME=bedrock.url,
        OPENAI_BASE_URL=openai.base_url,
        OPENAI_API_KEY="sk-make-run-test",
        ADMIN_PASSWORD=password,
    )
    log = tmp_path / "make-run.log"
    with log.open("wb") as out:
        process = make(
            "-o",
            ".venv/.installed",
            "run",
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(f"http://127.0.0.1:{port}", password, process, log)
    try:
        wait_until_serving(served)
        yield served
    finally:
        stop(process)


def answer_text(response: dict[str, Any]) -> str:
    [message] = [item for item in response["output"] if item["type"] == "message"]
    return "".join(part["text"] for part in message["content"])


# The server commits to this test's database; serialized_rollback restores the seeded rows
# that the flush after the test removes.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_make_run_with_llm_offline_false_calls_bedrock_and_openai(served, fakes):
    bedrock, openai = fakes
    bedrock.script(Turn(text=["Hello from ", "Bedrock."]))
    openai.script(Turn(text=["Hello from ", "OpenAI."]))
    token = served.token()  # the superuser devsetup made, with ADMIN_PASSWORD
    ask = {"messages": [{"role": "user", "content": "Say hello."}]}

    calculator = served.call("POST", "/v1/agents/lookup", {"name": "Calculator"}, token)
    agent_id = calculator["agent"]["id"]
    by_bedrock = served.call("POST", f"/v1/agents/{agent_id}/versions/latest/invoke", ask, token)

    config = {**CALCULATOR_CONFIG, "llmModelId": "openai/gpt-4o-mini"}
    created = served.call(
        "POST", "/v1/agents", {"name": "gpt", "agentType": "tool", "config": config}, token
    )
    by_openai = served.call(
        "POST", f"/v1/agents/{created['id']}/versions/latest/invoke", ask, token
    )

    assert answer_text(by_bedrock) == "Hello from Bedrock."
    assert by_bedrock["model"] == BEDROCK_MODEL  # not the offline model standing in
    assert bedrock.model_ids() == [BEDROCK_MODEL]
    signed = bedrock.requests[0].headers["Authorization"]  # AWS_ACCESS_KEY_ID, AWS_REGION
    assert signed.startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/us-east-1/bedrock/aws4_request" in signed
    assert answer_text(by_openai) == "Hello from OpenAI."
    [request] = openai.requests
    assert request.body["model"] == "gpt-4o-mini"
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["authorization"] == "Bearer sk-make-run-test"
    # DEBUG kept make's default (with DEBUG off, no SECRET_KEY and no ALLOWED_HOSTS, the
    # server would not have started or answered), and the start was quiet.
    log = served.tail()
    assert "LLM_OFFLINE=false" in log
    assert "'lifespan' protocol appears unsupported" not in log
    assert "No hostname was supplied" not in log


def test_make_run_takes_port_and_host_from_the_environment(tmp_path):
    environment = newcomer_environment(tmp_path)
    environment.update(PORT="9001", HOST="::1")
    dry_run = make("-n", "-o", ".venv/.installed", "run", env=environment, stdout=subprocess.PIPE)
    printed, _ = dry_run.communicate(timeout=60)

    assert dry_run.returncode == 0
    commands = printed.decode().replace("\\\n", " ").splitlines()
    [serve] = [line for line in commands if "uvicorn" in line]
    assert serve.split()[-4:] == ["--host", "::1", "--port", "9001"]


# --- make clean-db ---------------------------------------------------------------------------


def handles(pgdata: Path) -> list[int]:
    """The pids pgserver holds as the server's users."""
    path = pgdata / ".handle_pids.json"
    return list(json.loads(path.read_text())) if path.exists() else []


def postmaster(pgdata: Path) -> int | None:
    """The pid of the PostgreSQL server running on `pgdata`, if one is."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return pid


@pytest.fixture
def var_dir() -> Iterator[Path]:
    """A VAR_DIR outside pytest's temporary directories: run as root, pgserver runs
    PostgreSQL as a user of its own and opens the path's parents to it, and each pytest
    session that starts closes /tmp/pytest-of-root again."""
    path = Path(tempfile.mkdtemp(prefix="agentbuilder-var-"))
    try:
        yield path
    finally:
        pid = postmaster(path / "pgdata")
        if pid is not None:  # the test failed before clean-db stopped it
            os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
            deadline = time.monotonic() + 30
            while postmaster(path / "pgdata") and time.monotonic() < deadline:
                time.sleep(0.1)
        shutil.rmtree(path, ignore_errors=True)


def test_make_clean_db_stops_the_database_after_the_server_was_ended_with_sigterm(
    tmp_path, var_dir
):
    """uvicorn on the embedded default (no DATABASE_URL): it starts the database and
    registers with pgserver as a user; its SIGTERM must not keep the database up for good."""
    pgdata = var_dir / "pgdata"
    environment = newcomer_environment(tmp_path)
    environment.pop("DATABASE_URL")
    environment.update(VAR_DIR=str(var_dir), DEBUG="true")
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "agentbuilder.asgi:application"]
    command += ["--lifespan", "off", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "uvicorn.log"
    with log.open("wb") as out:
        uvicorn = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=out)  # noqa: S603
    try:
        wait_until_serving(Served(f"http://127.0.0.1:{port}", "", uvicorn, log))
        assert handles(pgdata) == [uvicorn.pid]

        in_use = make("clean-db", env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, refused = in_use.communicate(timeout=60)
        assert in_use.returncode != 0  # a user still runs: named, and the database stays
        assert f"in use by pid {uvicorn.pid}" in refused.decode()
        assert postmaster(pgdata) is not None
    finally:
        uvicorn.terminate()
        uvicorn.wait(timeout=30)

    # uvicorn re-raises the SIGTERM it shut down on: no atexit, its pid stays listed.
    assert uvicorn.returncode == -signal.SIGTERM
    assert handles(pgdata) == [uvicorn.pid]
    cleaned = make("clean-db", env=environment, stdout=subprocess.PIPE)
    printed, _ = cleaned.communicate(timeout=60)
    again = make("clean-db", env=environment, stdout=subprocess.PIPE)
    printed_again, _ = again.communicate(timeout=60)

    assert cleaned.returncode == 0
    assert "stopped the embedded database" in printed.decode()
    assert postmaster(pgdata) is None
    assert handles(pgdata) == []
    assert again.returncode == 0
    assert "is not running" in printed_again.decode()
