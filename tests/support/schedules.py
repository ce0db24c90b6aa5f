"""What the schedules' tests share: a schedule whose ticks were missed, beat's scheduler
driven pass by pass in this process, and a wait for the runs a tick started."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agentbuilder.celery import app
from agents.models import RUN_ENDED, Agent, Run, Schedule
from agents.schedules.beat import ScheduleScheduler
from agents.schedules.services import ScheduleSpec, schedule_create

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}
# Generous: a run in another thread or process on a busy 2-core machine; the wait ends as
# soon as the runs are there.
PATIENCE = 120.0


def overdue_schedule(agent: Agent, owner: Any, *, missed_hours: int = 3, **spec: Any) -> Schedule:
    """An hourly schedule whose last tick was two minutes ago (the next is about an hour
    away) and whose beat last sent a tick `missed_hours` ago: as beat leaves it when it
    was down that long."""
    minute = (timezone.now() - timedelta(minutes=2)).minute
    fields = {"cron": f"{minute} * * * *", "input": ASK, **spec}
    schedule = schedule_create(user=owner, agent=agent, spec=ScheduleSpec(**fields))
    long_ago = timezone.now() - timedelta(hours=missed_hours)
    Schedule.objects.filter(pk=schedule.pk).update(tick_after=long_ago)
    PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(last_run_at=long_ago)
    schedule.refresh_from_db()
    return schedule


@contextmanager
def driven_beat() -> Iterator[Callable[[int], None]]:
    """Beat's scheduler in this process, as `celery beat` runs it: `passes(n)` runs n passes
    of its loop (each sends what is due, and records the send: CELERY_BEAT_SYNC_EVERY)."""
    scheduler = ScheduleScheduler(app=app)

    def passes(count: int) -> None:
        for _ in range(count):
            scheduler.tick()

    try:
        yield passes
    finally:
        # Its finalizer would record again whenever it is collected, from whichever thread
        # (closing that thread's connection, maybe in another test's transaction).
        scheduler._finalize.cancel()


def wait_for(
    condition: Callable[[], bool],
    alive: Sequence[subprocess.Popen[bytes]] = (),
    logs: Sequence[Path] = (),
) -> None:
    """Until `condition()` holds; the processes `alive` must stay so (their `logs` shown if
    not, or if it never holds)."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        shown = "\n".join(f"{log}:\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
        assert all(p.poll() is None for p in alive), shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.05)


def runs_of(
    schedule: Schedule,
    count: int,
    alive: Sequence[subprocess.Popen[bytes]] = (),
    logs: Sequence[Path] = (),
) -> list[Run]:
    """The schedule's runs once `count` of them have ended, oldest first."""

    def ended() -> bool:
        runs = Run.objects.filter(schedule=schedule)
        return runs.count() >= count and not runs.exclude(status__in=RUN_ENDED).exists()

    wait_for(ended, alive, logs)
    return list(Run.objects.filter(schedule=schedule).order_by("started_at"))
