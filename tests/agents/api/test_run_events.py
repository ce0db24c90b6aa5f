"""Following a run's events (GET /v1/runs/{id}/events, docs/api.md#run-events) against the
platform in real uvicorn processes on one test database (tests/live.py), the model a fake
OpenAI server: a run started in one process is followed live from another; a follower that
leaves and comes back a hundred times during one run assembles the run's events once each,
in order; a run canceled from another process than the one running it ends its followers'
streams with the canceled line, and its invoke-stream too; so does the playground's Stop
sent to another process than the one streaming the turn.

No wall-clock limit: the runs the followers leave and rejoin advance only as far as the
follower has come (the fake model's gate), and each wait has a deadline a loaded machine
honours."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from django.urls import reverse

from agents.access.tokens import token_encode
from agents.models import Agent, Run, RunEvent
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import (  # noqa: F401 (the fixtures counter, model, not_sweeping_here, token)
    counter_agent,
    fake_model,
    not_sweeping_here,
    owner_token,
    server_on,
)
from tests.support.backends import openai_server  # noqa: F401
from tests.support.run_events import ndjson_lines, sse_events, stored_lines

PATIENCE = 120.0  # seconds a loaded machine may take for what takes one when idle
TRANSACTIONAL = pytest.mark.django_db(transaction=True, serialized_rollback=True)
pytestmark = [TRANSACTIONAL, pytest.mark.usefixtures("reseed_after_module", "not_sweeping_here")]
ASK = {"messages": [{"role": "user", "content": "Count"}]}


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + PATIENCE
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE}s"
        time.sleep(0.05)
    return found


def http(port: int, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://127.0.0.1:{port}/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=PATIENCE,
    )


def send_at_once(client: httpx.Client, agent: Agent) -> str:
    """A run the server runs on its own (an A2A send that does not block): its id."""
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": "Count"}],
    }
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {"message": message, "configuration": {"blocking": False}},
    }
    answer = client.post(f"/a2a/{agent.name}", json=send)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["result"]["id"])


def follow(client: httpx.Client, run_id: str, **headers: str) -> bytes:
    with client.stream("GET", f"/runs/{run_id}/events", headers=headers) as stream:
        assert stream.status_code == 200, stream.read()
        return stream.read()


@pytest.fixture
def two_servers(model: FakeOpenAI, tmp_path: Path) -> Iterator[tuple[int, int]]:
    with server_on(model, tmp_path / "a.log") as a, server_on(model, tmp_path / "b.log") as b:
        yield a.port, b.port
        logs = a.output() + b.output()
    assert "Traceback" not in logs, logs


def test_a_run_started_in_one_process_is_followed_live_from_another(
    model: FakeOpenAI, counter: Agent, token: str, two_servers: tuple[int, int]
) -> None:
    model.fallback = Turn(text=[f"{n}, " for n in range(12)], delay=0.5, pause=0.05)
    a, b = two_servers

    with http(a, token) as on_a, http(b, token) as on_b:
        run_id = send_at_once(on_a, counter)
        # Started before the run has stored much: both follow it live to its end.
        lines = ndjson_lines(follow(on_b, run_id))
        sse = sse_events(follow(on_b, run_id, Accept="text/event-stream"))

    stored = stored_lines(run_id)
    assert lines == stored
    assert [data for _, data in sse] == stored
    assert [event_id for event_id, _ in sse] == [str(line["index"]) for line in stored]
    assert lines[-1]["type"] == "response.completed"
    assert "".join(line["delta"] for line in lines if "delta" in line) == "".join(
        f"{n}, " for n in range(12)
    )
    assert Run.objects.get(pk=run_id).status == "completed"


def test_a_follower_leaving_and_coming_back_a_hundred_times_gets_every_event_once(
    model: FakeOpenAI, counter: Agent, token: str, two_servers: tuple[int, int]
) -> None:
    deltas, ahead = 120, 8
    # The model sends its next delta only when let: it stays at most `ahead` deltas in
    # front of the follower, so the run cannot end before the follower has come back
    # about a hundred times.
    gate = threading.Semaphore(ahead)
    model.fallback = Turn(text=[f"<{n}>" for n in range(deltas)], gate=gate)
    a, b = two_servers
    assembled: list[dict[str, Any]] = []
    attaches = live_attaches = 0

    with http(a, token) as on_a, http(b, token) as on_b:
        run_id = send_at_once(on_a, counter)
        while not assembled or assembled[-1]["type"] not in (
            "response.completed",
            "response.failed",
        ):
            after = assembled[-1]["index"] + 1 if assembled else 0
            live = Run.objects.get(pk=run_id).status == "in_progress"
            # Alternately by `after` and as an SSE client resuming, each on either process.
            port_client = on_b if attaches % 2 else on_a
            path = f"/runs/{run_id}/events"
            if attaches % 3:
                request = port_client.build_request("GET", path, params={"after": after})
            else:
                headers = {"Accept": "text/event-stream"}
                if assembled:
                    headers["Last-Event-ID"] = str(assembled[-1]["index"])
                request = port_client.build_request("GET", path, headers=headers)
            response = port_client.send(request, stream=True)
            try:
                assert response.status_code == 200
                # One line, then the follower goes away mid-stream.
                for raw in response.iter_lines():
                    if raw.startswith("data: "):
                        raw = raw[len("data: ") :]
                    if raw.startswith("{"):
                        assembled.append(json.loads(raw))
                        break
            finally:
                response.close()
            attaches += 1
            live_attaches += live
            gate.release()

    assert live_attaches >= 100, (attaches, live_attaches)
    assert assembled == stored_lines(run_id)  # in order, none twice, none missing
    texts = [line["delta"] for line in assembled if "delta" in line]
    assert texts == [f"<{n}>" for n in range(deltas)]
    assert Run.objects.get(pk=run_id).status == "completed"


def test_a_run_canceled_from_another_process_ends_its_followers_and_its_stream_canceled(
    model: FakeOpenAI, counter: Agent, token: str, two_servers: tuple[int, int]
) -> None:
    # Two deltas, then the model holds its stream open far longer than the test waits.
    model.fallback = Turn(text=["Counting: ", "one, "], pause=0.05, hang=300)
    a, b = two_servers
    followed: dict[str, bytes] = {}

    with http(a, token) as on_a, http(b, token) as on_b:
        path = f"/agents/{counter.pk}/versions/latest/invoke-stream"
        with on_a.stream("POST", path, json=ASK) as stream:  # consumed by process a
            run_id = stream.headers["X-Run-Id"]
            lines = stream.iter_lines()
            read = []
            while "one, " not in json.dumps(read):  # both deltas: the run waits on the model
                read.append(json.loads(next(lines)))
            wait_for(lambda: RunEvent.objects.filter(run_id=run_id).count() >= 3, "stored")
            follower = threading.Thread(
                target=lambda: followed.update(body=follow(on_b, run_id)), daemon=True
            )
            follower.start()
            asked = on_b.post(f"/runs/{run_id}/cancel")  # received by process b
            assert asked.status_code == 202, asked.text
            rest = [json.loads(line) for line in lines]
        follower.join(PATIENCE)
        again = ndjson_lines(follow(on_a, run_id, **{"Last-Event-ID": "0"}))

    assert [line["type"] for line in rest] == ["response.failed"]
    assert rest[-1]["response"]["error"]["code"] == "canceled"
    assert Run.objects.get(pk=run_id).status == "canceled"
    lines_followed = ndjson_lines(followed["body"])
    assert lines_followed[:-1] == stored_lines(run_id)
    assert lines_followed[-1]["type"] == "response.failed"
    assert lines_followed[-1]["response"]["error"]["code"] == "canceled"
    assert "index" not in lines_followed[-1]
    assert again[-1] == lines_followed[-1]  # however late the follower comes
    assert model.disconnected.wait(10), "the model call in process a was not abandoned"


def test_the_playgrounds_stop_sent_to_another_process_ends_the_turn_canceled(
    model: FakeOpenAI, counter: Agent, two_servers: tuple[int, int]
) -> None:
    model.fallback = Turn(text=["Counting: ", "one, "], pause=0.05, hang=300)
    a, b = two_servers
    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(staff)
    browser.get(reverse("admin:index"))  # sets the CSRF cookie
    cookies = {name: morsel.value for name, morsel in browser.cookies.items()}
    headers = {"X-CSRFToken": cookies["csrftoken"]}
    stream_path = reverse("admin:agents_agent_playground_stream", args=[counter.pk])
    turn = {"version": "latest", "message": "Count slowly."}

    with (
        httpx.Client(base_url=f"http://127.0.0.1:{a}", cookies=cookies, timeout=PATIENCE) as on_a,
        httpx.Client(base_url=f"http://127.0.0.1:{b}", cookies=cookies, timeout=PATIENCE) as on_b,
        on_a.stream("POST", stream_path, json=turn, headers=headers) as stream,  # process a
    ):
        assert stream.status_code == 200
        run_id = stream.headers["X-Run-Id"]
        lines = stream.iter_lines()
        read = []
        while "one, " not in json.dumps(read):  # both deltas: the run waits on the model
            read.append(json.loads(next(lines)))
        cancel = reverse("admin:agents_agent_playground_cancel", args=[counter.pk, run_id])
        stopped = on_b.post(cancel, headers=headers)  # the Stop, received by process b
        rest = [json.loads(line) for line in lines if line]
        again = on_b.post(cancel, headers=headers)

    assert stopped.status_code == 202, stopped.text
    assert [line["type"] for line in rest] == ["failed"]
    assert rest[-1]["code"] == "canceled"
    run = Run.objects.get(pk=run_id)
    assert (run.protocol, run.status) == ("playground", "canceled")
    assert again.status_code == 409  # ended: nothing left to stop
    assert model.disconnected.wait(10), "the model call in process a was not abandoned"


def test_an_mcp_call_canceled_by_notification_to_another_process_ends_canceled(
    model: FakeOpenAI, counter: Agent, token: str, owner: Any, two_servers: tuple[int, int]
) -> None:
    model.fallback = Turn(text=["Counting: "], hang=300)  # the call never ends by itself
    a, b = two_servers
    call = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": counter.name, "arguments": {"message": "Count"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    stranger = token_encode(user_id=UserFactory(username="mallory").pk, environment_id=None)[0]

    def cancel(port: int, bearer: str, request_id: object) -> int:
        notification = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the user changed their mind"},
        }
        with http(port, bearer) as client:
            return client.post("/mcp", json=notification, headers=accept).status_code

    with http(a, token) as on_a, on_a.stream("POST", "/mcp", json=call, headers=accept) as answer:
        assert answer.status_code == 200
        wait_for(lambda: Run.objects.filter(protocol="mcp").exists() and model.bodies, "running")
        run = Run.objects.get(protocol="mcp")
        # Another caller's cancel of the same id, and the owner's of another id: nothing.
        assert cancel(b, stranger, 41) == 202
        assert cancel(b, token, 42) == 202
        assert Run.objects.get(pk=run.pk).status == "in_progress"
        assert cancel(b, token, 41) == 202  # received by process b; the run is a's
        body = answer.read().decode()

    ended = Run.objects.get(pk=run.pk)
    assert (ended.status, ended.client_request_id) == ("canceled", "41")
    assert '"id":41' in body.replace(" ", "")  # a's stream answered the call, then ended
    assert owner.pk == ended.caller_id
