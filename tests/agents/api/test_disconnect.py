"""A client that goes away mid-stream, against a real uvicorn: the model call is abandoned
and the run is recorded as canceled."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.asgi import get_asgi_application

from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.models import Run
from tests.fakes.server import Turn
from tests.live import live_app
from tests.support.backends import Backend
from tests.support.native import CREATED, DELTA

# Transactional: the server's threads only see committed rows. serialized_rollback restores
# the catalogs and the `default` environment that the flush would erase.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

ASK = {"messages": [{"role": "user", "content": "Count slowly."}]}


@pytest.fixture
def live_server_port() -> Iterator[int]:
    with live_app(get_asgi_application()) as served:
        yield served.port


def run_status_after(run_id: str, seconds: float) -> tuple[str, float]:
    """Poll the run until it leaves in_progress or `seconds` pass: (status, waited)."""
    start = time.monotonic()
    while True:
        status = Run.objects.get(pk=run_id).status
        waited = time.monotonic() - start
        if status != "in_progress" or waited > seconds:
            return status, waited
        time.sleep(0.02)


def post(port: int, path: str, token: str) -> http.client.HTTPConnection:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(
        "POST",
        path,
        body=json.dumps(ASK),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    return connection


def hang_up(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    assert sock is not None
    sock.shutdown(socket.SHUT_RDWR)
    connection.close()


@pytest.fixture
def slow_agent(fake_backend: Backend, make_agent: Any) -> Any:
    # Two deltas, then the model holds the stream open far longer than the test waits: only
    # the client's leaving can end the run, however slow a loaded machine is.
    fake_backend.script(Turn(text=["Counting: ", "one, "], pause=0.05, hang=600))
    return make_agent("Calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))


# Only so that a cancel that never comes fails the test rather than hanging it: the cancel
# is immediate (a quiet machine waits milliseconds), and the model's hang outlasts this, so
# what ends the run is the client leaving. 15 s was once too short on a machine loaded by
# four test suites at once.
CANCEL_SECONDS = 120.0


def assert_canceled(fake_backend: Backend, run_id: str) -> None:
    assert fake_backend.fake is not None
    assert fake_backend.fake.disconnected.wait(CANCEL_SECONDS), "the model call was kept"
    status, _ = run_status_after(run_id, CANCEL_SECONDS)
    assert status == "canceled"
    run = Run.objects.get(pk=run_id)
    assert run.completed_at is not None
    assert run.latency_ms is not None
    assert run.messages[0] == {"role": "user", "content": "Count slowly."}


def test_client_that_hangs_up_mid_stream_cancels_the_run(
    fake_backend: Backend, slow_agent: Any, owner: Any, live_server_port: int
) -> None:
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    path = f"/v1/agents/{slow_agent.pk}/versions/latest/invoke-stream"
    connection = post(live_server_port, path, token)
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/plain; charset=utf-8"
    run_id = response.getheader("X-Run-Id")
    assert run_id
    lines = [json.loads(response.readline()) for _ in range(3)]
    assert [line["type"] for line in lines] == [CREATED, DELTA, DELTA]
    assert Run.objects.get(pk=run_id).status == "in_progress"

    hang_up(connection)

    assert_canceled(fake_backend, run_id)


def test_client_that_hangs_up_while_waiting_for_invoke_cancels_the_run(
    fake_backend: Backend, slow_agent: Any, owner: Any, live_server_port: int
) -> None:
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    path = f"/v1/agents/{slow_agent.pk}/versions/latest/invoke"
    connection = post(live_server_port, path, token)
    assert fake_backend.fake is not None
    deadline = time.monotonic() + 30  # a generous wait for the condition: a busy machine
    while not fake_backend.fake.requests:
        assert time.monotonic() < deadline, "the model was never called"
        time.sleep(0.01)
    [run] = Run.objects.filter(agent=slow_agent)
    assert run.status == "in_progress"

    hang_up(connection)

    if fake_backend.name == "bedrock":
        # Nothing streams here, so the model was asked for one answer (Converse), and a
        # call botocore is blocked in cannot be abandoned: the run ends canceled at once,
        # and its answer is dropped when it comes (docs/architecture.md#non-streamed-calls).
        assert [r.path.rsplit("/", 1)[-1] for r in fake_backend.fake.requests] == ["converse"]
        status, _ = run_status_after(str(run.pk), CANCEL_SECONDS)
        assert status == "canceled"
        return
    assert_canceled(fake_backend, str(run.pk))
