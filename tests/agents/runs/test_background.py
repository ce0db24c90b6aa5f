"""Background runs (docs/api.md#background-runs): `"background": true` answers 202 with the
run `queued`, and a worker runs it to its end, recorded as any run.

In this process (no broker: the embedded mode, where the process's runner stands in for
the workers), then through a real Redis and real Celery workers beside a real server
process, with the faults the issue names: a worker killed mid-run, a broker restarted with
runs queued. No wall-clock limit: each wait ends as soon as what it waits for holds; the
deadlines are only how long a loaded machine may take.
"""

from __future__ import annotations

import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.test import override_settings
from django.utils import timezone

from agents.llm.base import Message
from agents.models import RUN_ENDED, Agent, Run, RunEvent
from agents.runs import background
from agents.runs.event_codec import event_from_json
from agents.runs.request import RunRequest
from agents.runs.start import invocation_queue
from agents.runs.stream import collected_events
from agents.runtime.events import ResponseCompleted, ResponseCreated, ResponseFailed
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
from tests.support.native import REVIEW_TASK
from tests.support.processes import free_port, start_redis, start_worker, stop
from tests.support.run_events import ndjson_lines, stored_lines

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}
PARTS = [{"type": "text", "text": "What is 3 times 5?"}]
INPUTS = {"product": "Acme kettle", "review": "Boils in 2 minutes, very positive."}
PATIENCE = 180.0  # seconds a loaded machine may take for what takes one when idle

pytestmark = [
    # The runner's threads and the processes see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def ended(run_id: Any, seconds: float = PATIENCE) -> Run:
    deadline = time.monotonic() + seconds
    while (run := Run.objects.get(pk=run_id)).status not in RUN_ENDED:
        assert time.monotonic() < deadline, f"run {run_id} still {run.status}"
        time.sleep(0.05)
    return run


def events_of(run_id: Any) -> list[Any]:
    rows = RunEvent.objects.filter(run_id=run_id).order_by("index").values_list("index", "event")
    assert [index for index, _ in rows] == list(range(len(rows)))  # from 0, no gap
    return [event_from_json(event) for _, event in rows]


def follow(url: str, headers: dict[str, str], reading: threading.Event) -> bytes:
    """A run's events followed from 0 to its end; `reading` is set once the first came."""
    chunks = []
    with httpx.stream("GET", url, headers=headers, timeout=PATIENCE) as answer:
        assert answer.status_code == 200, answer.read()
        for chunk in answer.iter_bytes():
            chunks.append(chunk)
            reading.set()
    return b"".join(chunks)


def accepted(answer: Any) -> str:
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body == {"runId": body["runId"], "status": "queued"}
    assert answer["Location"] == f"/v1/runs/{body['runId']}"
    assert answer["X-Run-Id"] == body["runId"]
    return str(body["runId"])


# ---------------------------------------------------------------- in this process


@pytest.mark.parametrize(
    ("route", "body", "protocol"),
    [
        ("invoke", ASK, "native"),
        ("invoke-stream", ASK, "native"),
        ("respond", ASK, "respond"),
        ("process", {"input": [{"type": "message", "role": "user", "content": PARTS}]}, "process"),
    ],
)
def test_a_background_call_answers_202_and_its_run_is_taken_and_recorded(
    owner_client: Any, make_agent: Callable[..., Agent], route: str, body: Any, protocol: str
) -> None:
    calc = make_agent("Calculator")
    url = f"/v1/agents/{calc.pk}/versions/latest/{route}"

    run_id = accepted(owner_client.post(url, {**body, "background": True}, format="json"))

    run = ended(run_id)
    assert (run.status, run.protocol, run.error) == ("completed", protocol, None)
    assert "15" in str(run.output)
    assert run.queued_at is not None
    assert run.queued_at <= run.started_at
    assert run.request is None  # kept only until a worker took it
    events = events_of(run_id)
    assert isinstance(events[0], ResponseCreated)
    assert isinstance(events[-1], ResponseCompleted)
    shown = owner_client.get(f"/v1/runs/{run_id}").json()
    assert (shown["status"], shown["output"]) == ("completed", run.output)


def test_a_background_task_run_keeps_its_inputs_and_pins_the_version_it_resolved(
    owner_client: Any, make_agent: Callable[..., Agent]
) -> None:
    task = make_agent("ReviewRater", "task", config=REVIEW_TASK)
    url = f"/v1/agents/{task.pk}/versions/latest/invoke-task"

    run_id = accepted(owner_client.post(url, {"inputs": INPUTS, "background": True}, "json"))

    run = ended(run_id)
    assert run.status == "completed", run.error
    assert run.messages[0] == {"role": "user", "inputs": INPUTS}
    assert run.version_id == task.versions.get().pk


def test_a_refused_background_call_is_refused_at_once_and_queues_nothing(
    owner_client: Any, make_agent: Callable[..., Agent]
) -> None:
    task = make_agent("ReviewRater", "task", config=REVIEW_TASK)
    calc = make_agent("Calculator")
    base = "/v1/agents/{}/versions/latest/{}"

    bad_inputs = owner_client.post(
        base.format(task.pk, "invoke-task"),
        {"inputs": {"product": "x"}, "background": True},
        "json",
    )
    wrong_type = owner_client.post(
        base.format(task.pk, "invoke"), {**ASK, "background": True}, format="json"
    )
    not_a_flag = owner_client.post(
        base.format(calc.pk, "invoke"), {**ASK, "background": "yes"}, format="json"
    )
    unknown = owner_client.post(
        base.format(uuid.uuid4(), "invoke"), {**ASK, "background": True}, format="json"
    )

    assert bad_inputs.status_code == 400
    assert bad_inputs.json()["detail"][0]["loc"][:3] == ["body", "inputs", "review"]
    assert wrong_type.status_code == 400
    assert not_a_flag.status_code == 400
    assert not_a_flag.json()["detail"][0]["loc"] == ["body", "background"]
    assert unknown.status_code == 404
    # The refusals that opened a run closed it `failed`, as a call without `background`
    # does; none is left queued for a worker.
    assert not Run.objects.exclude(status="failed").exists()
    assert Run.objects.count() == 2


def queued_run(owner: Any, agent: Agent, environment: Any) -> uuid.UUID:
    """A run queued and handed to no one: as a lost message leaves it."""
    request = RunRequest(
        user=owner,
        environment=environment,
        agent_id=agent.pk,
        version_ref="latest",
        protocol="native",
        route="/invoke",
        agent_types=("tool", "rag"),
        messages=(Message("user", "What is 3 times 5?"),),
    )
    return invocation_queue(request)


def test_a_queued_run_is_canceled_at_once_and_no_worker_runs_it_after(
    owner_client: Any, owner: Any, env: Any, make_agent: Callable[..., Agent]
) -> None:
    run_id = queued_run(owner, make_agent("Calculator"), env)

    canceled = owner_client.post(f"/v1/runs/{run_id}/cancel")
    again = owner_client.post(f"/v1/runs/{run_id}/cancel")

    assert canceled.status_code == 202, canceled.json()
    assert canceled.json()["status"] == "canceled"
    assert again.status_code == 409
    assert background.run_claim(run_id) is None  # its message, delivered late: nothing runs
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.error, run.request) == ("canceled", None, None)
    assert run.latency_ms == 0  # nothing ran
    assert not RunEvent.objects.filter(run_id=run_id).exists()


def test_a_run_is_claimed_once_however_often_its_message_comes(
    owner: Any, env: Any, make_agent: Callable[..., Agent]
) -> None:
    run_id = queued_run(owner, make_agent("Calculator"), env)

    first = background.run_claim(run_id)
    second = background.run_claim(run_id)

    assert first is not None
    assert first.run_id == run_id
    assert second is None
    assert Run.objects.get(pk=run_id).status == "in_progress"
    background.run_here(run_id).result(timeout=PATIENCE)  # a runner's delivery: nothing runs
    assert Run.objects.get(pk=run_id).status == "in_progress"
    async_to_sync(collected_events)(first)  # the claimer runs it to its end
    assert ended(run_id).status == "completed"


@override_settings(RUN_QUEUE_LEASE_SECONDS=30, RUN_QUEUE_TIMEOUT_SECONDS=600)
def test_the_queues_sweep_hands_a_lapsed_run_over_again_and_fails_one_too_old(
    owner: Any, env: Any, make_agent: Callable[..., Agent]
) -> None:
    calc = make_agent("Calculator")
    lapsed, fresh, too_old = (queued_run(owner, calc, env) for _ in range(3))
    now = timezone.now()
    Run.objects.filter(pk=lapsed).update(lease_until=now - timedelta(seconds=1))
    Run.objects.filter(pk=too_old).update(queued_at=now - timedelta(seconds=601))

    background.queue_sweep()

    assert ended(lapsed).status == "completed"  # its message was lost; it ran after all
    run = Run.objects.get(pk=too_old)
    assert (run.status, run.error["code"]) == ("failed", "not_started")
    assert Run.objects.get(pk=fresh).status == "queued"  # its message may still come
    assert background.run_cancel_queued(fresh)


# ---------------------------------------------------------------- Redis and Celery workers


@contextmanager
def broker(tmp_path: Path, port: int | None = None) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    port = port or free_port()
    tmp_path.mkdir(parents=True, exist_ok=True)
    redis = start_redis(port, tmp_path)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(redis)


def worker(url: str, log: Path, model: FakeOpenAI, **env: str) -> Any:
    """A worker on the fake model, its runs in threads as the deployment runs them."""
    fake = {"LLM_OFFLINE": "false", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    return start_worker(url, log, pool="threads", **{**fake, "LIVENESS_THREAD": "true", **env})


def on_the_model(model: FakeOpenAI, log: Path) -> None:
    """Wait until the worker's run is waiting on the model."""
    deadline = time.monotonic() + PATIENCE
    while not model.bodies:
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.05)


def post_background(port: int, token: str, agent: Agent, count: int) -> list[str]:
    url = f"http://127.0.0.1:{port}/v1/agents/{agent.pk}/versions/latest/invoke"
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        answers = [http.post(url, json={**ASK, "background": True}) for _ in range(count)]
    assert [a.status_code for a in answers] == [202] * count, answers[0].text
    return [a.json()["runId"] for a in answers]


@pytest.mark.usefixtures("not_sweeping_here")
def test_background_runs_go_through_redis_to_a_celery_worker(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Fifteen."], delay=0.2)
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url) as server,
    ):
        runs = post_background(server.port, token, counter, 6)
        assert set(Run.objects.filter(pk__in=runs).values_list("status", flat=True)) == {
            "queued"
        }  # no worker yet: the server only queued them
        process = worker(url, tmp_path / "worker.log", model)
        try:
            finished = [ended(run) for run in runs]
        finally:
            stop(process)
        worker_log = (tmp_path / "worker.log").read_text(errors="replace")

    assert [(r.status, r.output) for r in finished] == [("completed", "Fifteen.")] * 6
    assert all(isinstance(events_of(r.pk)[-1], ResponseCompleted) for r in finished)
    assert worker_log.count("agents.run_queued") >= 6, worker_log
    assert "Traceback" not in worker_log


@pytest.mark.usefixtures("not_sweeping_here")
def test_a_worker_killed_mid_run_leaves_its_run_failed_interrupted_never_run_again(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Counting: "], hang=600)  # the run never ends by itself
    liveness = {"LIVENESS_SECONDS": "15"}
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url, **liveness) as server,
    ):
        process = worker(url, tmp_path / "worker.log", model, **liveness)
        [run_id] = post_background(server.port, token, counter, 1)
        on_the_model(model, tmp_path / "worker.log")
        process.kill()  # SIGKILL: no shutdown, no clean-up
        process.wait()
        run = ended(run_id)  # by the server's lease sweep

    assert (run.status, run.error["code"]) == ("failed", "interrupted")
    assert len(model.bodies) == 1  # documented: not run again, its tools may have acted


@pytest.mark.usefixtures("not_sweeping_here")
def test_runs_queued_while_the_broker_restarts_are_none_lost(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Fifteen."])
    port = free_port()
    # The queue's sweep runs every LIVENESS_SECONDS / 6 and hands over what lapsed.
    settings = {"LIVENESS_SECONDS": "12", "RUN_QUEUE_LEASE_SECONDS": "2"}
    with broker(tmp_path / "first", port) as url:
        server = server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url, **settings)
        with server as serving:
            runs = post_background(serving.port, token, counter, 10)
            assert Run.objects.filter(pk__in=runs, status="queued").count() == 10
        # Redis stops without persistence: the ten messages are gone with it.
    with (
        broker(tmp_path / "second", port) as url,
        server_on(model, tmp_path / "server2.log", CELERY_BROKER_URL=url, **settings),
    ):
        process = worker(url, tmp_path / "worker.log", model, **settings)
        try:
            finished = [ended(run) for run in runs]
        finally:
            stop(process)

    assert [r.status for r in finished] == ["completed"] * 10
    assert len(model.bodies) == 10  # each ran once


@pytest.mark.usefixtures("not_sweeping_here")
def test_a_worker_sent_sigterm_ends_its_run_interrupted_after_the_grace_and_exits(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Counting: "], hang=600)  # the run never ends by itself
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url) as server,
    ):
        process = worker(url, tmp_path / "worker.log", model, SHUTDOWN_GRACE_SECONDS="3")
        try:
            [run_id] = post_background(server.port, token, counter, 1)
            on_the_model(model, tmp_path / "worker.log")
            process.send_signal(signal.SIGTERM)  # Celery's warm shutdown
            exit_code = process.wait(PATIENCE)  # by itself, once its run has ended
        finally:
            stop(process)
        run = Run.objects.get(pk=run_id)

    assert exit_code == 0, (tmp_path / "worker.log").read_text()
    assert (run.status, run.error["code"]) == ("failed", "interrupted")
    assert isinstance(events_of(run_id)[-1], ResponseFailed)


@pytest.mark.usefixtures("not_sweeping_here")
def test_a_prefork_worker_runs_a_run_and_shuts_down_warm_with_no_error(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    # Each pool process starts its liveness thread as it starts (agentbuilder.celery): it
    # once raced Celery's Django fixup, which closes a new pool process's connection pool,
    # and logged "the pool ... is closed" / "is not open yet" from the thread's first pass.
    model.fallback = Turn(text=["Fifteen."])
    log = tmp_path / "worker.log"
    fake = {"LLM_OFFLINE": "false", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url) as server,
    ):
        process = start_worker(
            url, log, pool="prefork", concurrency=2, **fake, LIVENESS_THREAD="true"
        )
        try:
            [run_id] = post_background(server.port, token, counter, 1)
            run = ended(run_id)
            process.send_signal(signal.SIGTERM)  # Celery's warm shutdown, nothing running
            exit_code = process.wait(PATIENCE)  # by itself
        finally:
            stop(process)
    worker_log = log.read_text(errors="replace")

    assert (run.status, run.output) == ("completed", "Fifteen.")
    assert exit_code == 0, worker_log
    assert worker_log.count("ForkPoolWorker") >= 1, worker_log  # the run went through the pool
    assert "Traceback" not in worker_log
    assert "OperationalError" not in worker_log
    assert "ERROR/" not in worker_log


@pytest.mark.usefixtures("not_sweeping_here")
def test_a_run_on_a_celery_worker_is_canceled_through_the_server(
    model: FakeOpenAI, counter: Agent, token: str, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Counting: "], hang=600)  # the run never ends by itself
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url) as server,
    ):
        process = worker(url, tmp_path / "worker.log", model)
        try:
            [run_id] = post_background(server.port, token, counter, 1)
            on_the_model(model, tmp_path / "worker.log")
            base, auth = f"http://127.0.0.1:{server.port}", {"Authorization": f"Bearer {token}"}
            # Followed through the server while the worker runs it, with a broker set.
            reading = threading.Event()
            follower = ThreadPoolExecutor(max_workers=1).submit(
                follow, f"{base}/v1/runs/{run_id}/events", auth, reading
            )
            assert reading.wait(PATIENCE)  # following the live run when it is canceled
            with httpx.Client(headers=auth) as http:
                asked = http.post(f"{base}/v1/runs/{run_id}/cancel")
            run = ended(run_id)  # the worker's watcher sees the flag and stops the run
            followed = ndjson_lines(follower.result(timeout=PATIENCE))
        finally:
            stop(process)

    assert [line for line in followed if "index" in line] == stored_lines(run_id)
    assert followed[-1]["type"] == "response.failed"  # the run's end, told last
    assert "index" not in followed[-1]  # said by the follower, not a stored event
    assert asked.status_code == 202, asked.text
    assert asked.json()["status"] == "in_progress"  # as it stood: the worker ends it
    assert (run.status, run.error) == ("canceled", None)  # as every canceled run
    assert run.completed_at is not None
