"""Deliveries are sent by the processes that serve and work (agents/webhooks/dispatch.py),
with no test driving the passes: a real Celery worker sweeps runs a dead process left, its
delivery thread sends their events to a receiver that is down, the worker is stopped and
another started, the receiver comes up, and each event arrives once, signed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from agents.models import Agent, AgentWebhook, Run, WebhookDelivery
from agents.webhooks.delivery import message_id
from agents.webhooks.secret import environment_secret_rotate
from tests.support.processes import free_port, start_redis, start_worker, stop
from tests.support.webhooks import Receiver

pytestmark = [
    # The worker sees committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]
# A worker process on a busy 2-core machine imports Django and forks slowly: each wait ends
# as soon as its condition holds; this is only how long a machine may take.
PATIENCE = 180.0
RUNS = 5
WORKER_ENV = {
    "LIVENESS_THREAD": "true",
    "MCP_ALLOWED_HOSTS": "127.0.0.1",
    "WEBHOOK_POLL_SECONDS": "0.2",
    "WEBHOOK_BACKOFF_SECONDS": "0.1",
    "WEBHOOK_BACKOFF_MAX_SECONDS": "0.5",
}


def _until(condition: Callable[[], bool], worker: Any, log: Path) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert worker.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.1)


def test_a_receiver_down_across_a_worker_restart_gets_every_event_once(
    make_agent: Callable[..., Agent], admin_user: Any, tmp_path: Path
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    agent = make_agent("counter")
    secret = environment_secret_rotate(environment_id=agent.environment_id)
    receiver = Receiver()  # its port closed until the worker has tried it
    AgentWebhook.objects.create(agent=agent, url=receiver.url, events=["run.failed"])
    expired = timezone.now() - timedelta(seconds=5)  # as a killed process leaves them
    runs = Run.objects.bulk_create(
        Run(
            agent=agent,
            version=agent.versions.get(),
            caller=admin_user,
            protocol="native",
            lease_until=expired,
        )
        for _ in range(RUNS)
    )
    redis = start_redis(port := free_port(), tmp_path)
    broker = f"redis://127.0.0.1:{port}/0"
    log = tmp_path / "worker.log"
    worker = start_worker(broker, log, **WORKER_ENV)
    try:

        def tried_twice() -> bool:
            found = WebhookDelivery.objects.filter(attempts__gte=2)
            return found.count() == RUNS

        _until(tried_twice, worker, log)  # swept, then refused at the closed port, twice
        stop(worker)  # stopped with its deliveries pending
        assert not WebhookDelivery.objects.exclude(status="pending").exists()
        receiver.start()
        worker = start_worker(broker, tmp_path / "worker2.log", **WORKER_ENV)
        log = tmp_path / "worker2.log"

        def delivered() -> bool:
            return WebhookDelivery.objects.filter(status="delivered").count() == RUNS

        _until(delivered, worker, log)
    finally:
        stop(worker)
        stop(redis)
        receiver.stop()

    deliveries = {message_id(d.pk): d for d in WebhookDelivery.objects.all()}
    got = [r.headers["webhook-id"] for r in receiver.received]
    assert sorted(got) == sorted(deliveries)  # each once
    payloads = [r.verified(secret) for r in receiver.received]
    assert sorted(p["data"]["id"] for p in payloads) == sorted(str(r.pk) for r in runs)
    assert {p["type"] for p in payloads} == {"run.failed"}
    assert all(d.attempts >= 3 for d in deliveries.values())
