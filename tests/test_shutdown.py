"""A graceful shutdown (agentbuilder.shutdown, docs/api.md#shutdown), against real uvicorn
processes on the test database and a fake OpenAI model: on SIGTERM a server stops
accepting, lets its live streams finish within SHUTDOWN_GRACE_SECONDS, then ends the rest
`failed` / `interrupted`, each stream told; and two servers sharing one port restart one
after the other under load without losing a run or an event.

No wall-clock limit: each wait ends as soon as what it waits for holds; the deadlines are
only how long a loaded machine may take.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from agents.models import Agent, Run, RunEvent
from agents.runs.event_codec import event_from_json
from agents.runtime.events import ResponseCompleted, ResponseFailed
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import (  # noqa: F401 (the fixtures counter, model, not_sweeping_here, token)
    ServerProcess,
    counter_agent,
    fake_model,
    not_sweeping_here,
    owner_token,
)
from tests.support.backends import openai_server  # noqa: F401

ASK = {"messages": [{"role": "user", "content": "Count to ten."}]}
PATIENCE = 120.0  # seconds a loaded machine may take for what takes one when idle
# How a server that shut down by itself ends: uvicorn re-raises the SIGTERM it handled once
# it is done, with the default handler back (so the exit status says what stopped it).
EXITED = (0, -signal.SIGTERM)
FAKE_ENV = {"LLM_OFFLINE": "false", "OPENAI_API_KEY": "sk-test"}

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module", "not_sweeping_here"),
]


def server(model: FakeOpenAI, log: Path, **options: Any) -> ServerProcess:
    """A server as `make run` starts it: uvicorn's own limit 5 s past the grace."""
    grace = int(options.pop("grace", 30))
    env = {**FAKE_ENV, "OPENAI_BASE_URL": model.base_url, "SHUTDOWN_GRACE_SECONDS": str(grace)}
    args = ("--timeout-graceful-shutdown", str(grace + 5), *options.pop("uvicorn_args", ()))
    return ServerProcess(log, uvicorn_args=args, **{**env, **options})


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + PATIENCE
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE}s"
        time.sleep(0.05)
    return found


def stream(port: int, token: str, agent: Agent, opened: threading.Event | None = None) -> list[Any]:
    """An invoke-stream read to its end on a connection of its own: its lines."""
    url = f"http://127.0.0.1:{port}/v1/agents/{agent.pk}/versions/latest/invoke-stream"
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    lines = []
    with (
        httpx.Client(timeout=PATIENCE, limits=httpx.Limits(max_keepalive_connections=0)) as http,
        http.stream("POST", url, json=ASK, headers=headers) as answer,
    ):
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            if line:
                lines.append(json.loads(line))
                if opened is not None:
                    opened.set()
    return lines


def stored(run_id: str) -> list[Any]:
    rows = RunEvent.objects.filter(run_id=run_id).order_by("index").values_list("event", flat=True)
    return [event_from_json(event) for event in rows]


def run_of(lines: list[Any]) -> Run:
    response_id = lines[0]["response"]["id"]
    return Run.objects.get(response_id=response_id)


def test_sigterm_lets_live_streams_finish_then_ends_the_rest_interrupted(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    # The first call's answer takes about 2 s, well inside the grace; the second never ends.
    model.script(
        Turn(text=[f"{n}, " for n in range(1, 11)], pause=0.2),
        Turn(text=["Counting: "], hang=600),
    )
    served = server(model, tmp_path / "server.log", grace=15)
    with ThreadPoolExecutor(2) as pool:
        quick_open, slow_open = threading.Event(), threading.Event()
        quick: Future[list[Any]] = pool.submit(stream, served.port, token, counter, quick_open)
        wait_for(lambda: len(model.bodies) == 1, "the first call reached the model")
        slow: Future[list[Any]] = pool.submit(stream, served.port, token, counter, slow_open)
        wait_for(lambda: len(model.bodies) == 2 and slow_open.is_set(), "both are streaming")

        served.process.send_signal(signal.SIGTERM)
        wait_for(lambda: refused(served.port), "the server stops accepting")
        quick_lines, slow_lines = quick.result(PATIENCE), slow.result(PATIENCE)
        exit_code = served.process.wait(PATIENCE)  # by itself: nothing kills it

    assert exit_code in EXITED, served.output()
    assert quick_lines[-1]["type"] == "response.completed"
    assert run_of(quick_lines).status == "completed"
    assert slow_lines[-1]["type"] == "response.failed"
    assert slow_lines[-1]["response"]["error"]["code"] == "interrupted"
    slow_run = run_of(slow_lines)
    assert (slow_run.status, slow_run.error["code"]) == ("failed", "interrupted")
    assert "SHUTDOWN_GRACE_SECONDS" in slow_run.error["message"]
    last = stored(str(slow_run.pk))[-1]
    assert isinstance(last, ResponseFailed)
    assert last.code == "interrupted"
    assert "Traceback" not in served.output()


def refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


def test_a_connection_accepted_before_sigterm_has_its_later_request_answered(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    # The race a rolling restart meets: the server accepted the connection, then the signal
    # came before the request did. uvicorn's own protocol closes it with no answer.
    model.fallback = Turn(text=["One, ", "two."])
    log = tmp_path / "server.log"
    served = server(model, log, uvicorn_args=("--log-level", "trace"))
    body = json.dumps(ASK).encode()
    request = (
        f"POST /v1/agents/{counter.pk}/versions/latest/invoke HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    try:
        with socket.create_connection(("127.0.0.1", served.port), timeout=PATIENCE) as client:
            made = f"127.0.0.1:{client.getsockname()[1]} - HTTP connection made"
            wait_for(lambda: made in served.output(), "the server accepted the connection")
            served.process.send_signal(signal.SIGTERM)
            wait_for(lambda: refused(served.port), "the server stops accepting")
            client.sendall(request)  # no `Connection: close`: the server closes after it,
            answer = b""  # or recv times out and the test fails
            while chunk := client.recv(65536):
                answer += chunk
        exit_code = served.process.wait(PATIENCE)
    finally:
        served.stop()

    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:500]
    assert json.loads(payload)["output"][0]["content"][0]["text"] == "One, two."
    assert exit_code in EXITED, served.output()


def test_two_servers_behind_one_port_restart_in_turn_and_lose_no_run_or_event(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["One, ", "two, ", "three."], pause=0.15)
    calls = 36
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    listener.set_inheritable(True)
    logs = iter(tmp_path / f"server{n}.log" for n in range(4))
    servers = [server(model, next(logs), listener=listener) for _ in range(2)]
    port = listener.getsockname()[1]
    done: list[list[Any]] = []
    lock = threading.Lock()

    def call() -> None:
        lines = stream(port, token, counter)
        with lock:
            done.append(lines)

    try:
        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(call) for _ in range(calls)]
            for turn in range(2):  # each server in turn: SIGTERM, exit, a new one in its place
                wait_for(lambda t=turn: len(done) >= (t + 1) * calls // 3, "calls answered")
                old = servers[turn]
                old.process.send_signal(signal.SIGTERM)
                assert old.process.wait(PATIENCE) in EXITED, old.output()
                servers[turn] = server(model, next(logs), listener=listener)
            for future in futures:
                future.result(PATIENCE)
    finally:
        for served in servers:
            served.stop()
        listener.close()

    assert len(done) == calls
    assert [lines[-1]["type"] for lines in done] == ["response.completed"] * calls
    runs = Run.objects.filter(agent=counter)
    assert runs.count() == calls
    assert set(runs.values_list("status", flat=True)) == {"completed"}
    for lines in done:
        run = run_of(lines)
        events = stored(str(run.pk))
        assert isinstance(events[-1], ResponseCompleted)
        deltas = [line["delta"] for line in lines if line["type"] == "response.output_text.delta"]
        assert "".join(deltas) == run.output == "One, two, three."
