"""The agents app's Celery tasks (found by the app's autodiscovery)."""

from __future__ import annotations

import uuid

from celery import shared_task

from agents.runs import background


@shared_task(name=background.TASK, ignore_result=True)
def run_queued(run_id: str) -> None:
    """Run a background run in this worker, to its end: the task ends with the run, so a
    worker takes no more runs than it has slots (DETACHED_RUNS_CONCURRENCY, or the pool's
    size). Acknowledged when received, not retried: once claimed, a run whose worker died
    is closed `interrupted` by the lease sweep, never run twice (its tools may have acted);
    one lost before its claim is handed over again by the queue's sweep."""
    background.run_here(uuid.UUID(run_id)).result()
