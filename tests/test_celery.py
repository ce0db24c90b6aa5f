"""A Celery worker sweeps from its start-up (agentbuilder.celery): a restarted worker with
nothing in its queue still closes the runs a dead process left `in_progress`; in a prefork
pool process, only once Celery's Django fixup has closed the connection pool."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery import signals
from django.utils import timezone

from agentbuilder.celery import app
from agents.models import Agent, Run
from tests.support.processes import free_port, start_redis, start_worker, stop

# A worker process on a busy 2-core machine imports Django and forks its pool slowly: the
# wait ends as soon as the runs are closed, this is only how long a machine may take.
PATIENCE = 180.0

pytestmark = [
    # The worker sees committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


@pytest.mark.parametrize("pool", ["prefork", "solo", "threads"])
def test_a_worker_fails_a_dead_processs_runs_at_start_up_with_no_task(
    make_agent: Callable[..., Agent], admin_user: Any, tmp_path: Path, pool: str
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    agent = make_agent("counter")
    version = agent.versions.get()
    # As a killed process leaves them: in progress, their leases run out.
    expired = timezone.now() - timedelta(seconds=5)
    Run.objects.bulk_create(
        Run(agent=agent, version=version, caller=admin_user, protocol="native", lease_until=expired)
        for _ in range(20)
    )
    assert Run.objects.filter(status="in_progress").count() == 20
    redis = start_redis(port := free_port(), tmp_path)
    log = tmp_path / "worker.log"
    worker = start_worker(f"redis://127.0.0.1:{port}/0", log, pool=pool, LIVENESS_THREAD="true")
    try:
        deadline = time.monotonic() + PATIENCE
        while Run.objects.filter(status="in_progress").exists():
            assert worker.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.1)
    finally:
        stop(worker)
        stop(redis)

    runs = Run.objects.filter(agent=agent)
    assert [r.status for r in runs] == ["failed"] * 20
    assert {r.error["code"] for r in runs} == {"interrupted"}
    assert "Task " not in log.read_text(errors="replace")  # nothing ran: the start-up swept


def test_a_pool_process_starts_its_liveness_thread_after_the_fixup_closed_its_pool() -> None:
    # The order of worker_process_init's receivers is the order a pool process runs them.
    # Celery's Django fixup closes the new process's connection pool in its receiver; ours
    # starts the liveness thread, which uses that pool at once: ours must come after, or
    # the thread's first pass may lose its pool ("the pool ... is closed" / "is not open
    # yet", a race seen on a busy machine, not on demand). A worker made here, not started,
    # connects them as `celery worker` does.
    watched = [signals.worker_process_init, signals.task_prerun, signals.task_postrun]
    watched.append(signals.beat_embedded_init)
    before = {signal: list(signal.receivers) for signal in watched}
    try:
        app.WorkController(pool_cls="prefork", concurrency=1, hostname="order@test")
        order = [
            getattr(receiver, "__qualname__", "")
            for _, ref in signals.worker_process_init.receivers
            if (receiver := ref() if callable(ref) else ref) is not None
        ]
    finally:  # this process is no worker: leave the receivers as they were
        for signal, receivers in before.items():
            signal.receivers = receivers
            signal.sender_receivers_cache.clear()

    fixup = order.index("DjangoWorkerFixup.on_worker_process_init")
    assert order.index("_sweep_from_start_up") > fixup, order
