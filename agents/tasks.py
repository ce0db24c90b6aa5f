"""The agents app's Celery tasks (found by the app's autodiscovery)."""

from __future__ import annotations

import uuid

from celery import shared_task
from django.conf import settings
from django.db import connection

from agents.evals import runner as experiments
from agents.runs import background, retention
from agents.schedules.fire import schedule_fire
from agents.schedules.services import TICK_TASK


@shared_task(name=background.TASK, ignore_result=True)
def run_queued(run_id: str) -> None:
    """Run a background run in this worker, to its end: the task ends with the run, so a
    worker takes no more runs than it has slots (DETACHED_RUNS_CONCURRENCY, or the pool's
    size). Acknowledged when received, not retried: once claimed, a run whose worker died
    is closed `interrupted` by the lease sweep, never run twice (its tools may have acted);
    one lost before its claim is handed over again by the queue's sweep."""
    background.run_here(uuid.UUID(run_id)).result()


# Not retried, not acknowledged late: a tick is claimed once (agents.schedules.fire), and
# a tick lost with its worker is one run missed, not one run twice.
@shared_task(name=TICK_TASK, ignore_result=True)
def schedule_tick(schedule_id: str) -> str | None:
    """A schedule's tick, as beat sends it: the background run it started, if any."""
    try:
        run_id = schedule_fire(schedule_id=uuid.UUID(schedule_id))
    finally:
        # Back to the pool: the thread that ran the tick (a worker's, or beat's) keeps no
        # connection until its next tick, which the runs it queued may need now.
        connection.close()
    return None if run_id is None else str(run_id)


# Not retried: a slot that dies leaves its case leased, and the experiments' sweep runs it
# again or scores it failed (agents.evals.runner).
@shared_task(name=experiments.TASK, ignore_result=True)
def experiment_slot(experiment_id: str) -> int:
    """One slot of an experiment: its pending cases, one at a time, until none is left."""
    try:
        return experiments.slot_run(uuid.UUID(experiment_id))
    finally:
        connection.close()


# Daily, by beat (CELERY_BEAT_SCHEDULE); a prune cut short is finished by the next one.
@shared_task(name=retention.TASK, ignore_result=True)
def runs_prune() -> dict[str, int]:
    """Prune what RUN_RETENTION_DAYS no longer keeps (agents.runs.retention); nothing at 0."""
    if settings.RUN_RETENTION_DAYS < 1:
        return {}
    try:
        return retention.runs_prune(days=settings.RUN_RETENTION_DAYS).counts()
    finally:
        connection.close()
