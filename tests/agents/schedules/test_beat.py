"""The scheduler beat runs (agents/schedules/beat.py): every schedule's cron is loaded,
whatever its hour, so a tick missed while beat was down is sent as soon as it is back."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from agentbuilder.celery import app
from agents.access.permissions import Action, grant
from agents.models import Agent, Run
from agents.schedules.beat import ScheduleScheduler
from agents.schedules.services import ScheduleSpec, schedule_create
from tests.factories import UserFactory
from tests.support.processes import free_port, start_beat, start_redis, start_worker, stop
from tests.support.schedules import ASK, overdue_schedule, runs_of, wait_for

pytestmark = pytest.mark.django_db


def loaded(scheduler_class: type[DatabaseScheduler]) -> set[str]:
    scheduler = scheduler_class(app=app, lazy=True)
    try:
        return set(scheduler.all_as_schedule())
    finally:
        scheduler._finalize.cancel()  # it wrote nothing; nothing to record when collected


def test_a_cron_whose_hour_is_far_from_now_is_loaded(
    make_agent: Callable[..., Agent], admin_user: Any
) -> None:
    # Twelve hours away, or near it: 4 is always loaded (celery's own daily clean-up hour).
    hour = timezone.now().hour
    far_hour = next(h for h in ((hour + k) % 24 for k in range(12, 20)) if h != 4)
    spec = ScheduleSpec(cron=f"0 {far_hour} * * *", input=ASK)
    schedule = schedule_create(user=admin_user, agent=make_agent(), spec=spec)
    name = f"schedule {schedule.pk}"

    assert name in loaded(ScheduleScheduler)
    # django-celery-beat's own leaves it out until two hours before its hour: a tick it
    # missed would be sent then, early, and again on time.
    assert name not in loaded(DatabaseScheduler)


def test_beat_uses_it() -> None:
    assert app.conf.beat_scheduler == "agents.schedules.beat:ScheduleScheduler"


# ---------------------------------------------------------------- real processes


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # processes see commits
@pytest.mark.usefixtures("reseed_after_module")
def test_celery_beat_and_a_worker_run_a_missed_tick_once_as_the_owner(
    make_agent: Callable[..., Agent], env: Any, tmp_path: Path
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    owner = UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(owner, action, env)
    schedule = overdue_schedule(make_agent(), owner, missed_hours=3)
    redis = start_redis(port := free_port(), tmp_path)
    broker = f"redis://127.0.0.1:{port}/0"
    # Runs in threads, as the deployment runs them (agents/tasks.py).
    worker = start_worker(broker, tmp_path / "worker.log", pool="threads", LIVENESS_THREAD="true")
    beat = start_beat(broker, tmp_path / "beat.log")
    logs = (tmp_path / "worker.log", tmp_path / "beat.log")
    try:
        [run] = runs_of(schedule, 1, alive=(worker, beat), logs=logs)
        # Beat goes on sending what is due at least every 5 s; let it pass its loop again
        # until it has recorded its send, then kill it and start another, which reads it.
        sent = PeriodicTask.objects.filter(pk=schedule.periodic_task_id, total_run_count=1)
        wait_for(sent.exists, alive=(worker, beat), logs=logs)
        stop(beat)
        beat = start_beat(broker, again := tmp_path / "beat2.log")
        # Two passes of its loop: each would have sent the tick again if it were due.
        wait_for(lambda: again.read_text().count("beat: Waking up") >= 2, (beat,), (again,))
    finally:
        stop(beat)
        stop(worker)
        stop(redis)

    assert (run.status, run.caller, run.protocol) == ("completed", owner, "schedule"), run.error
    assert Run.objects.filter(schedule=schedule).count() == 1
    assert (tmp_path / "beat.log").read_text().count("Sending due task") == 1
    assert "Sending due task" not in again.read_text()
