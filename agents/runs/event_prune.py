"""Run events are kept RUN_EVENTS_TTL after their run ended (docs/api.md#run-events), then
pruned by the liveness pass every serving process and worker already runs
(agentbuilder.liveness): no beat, no Celery, nothing to deploy.

Each process prunes at most every PRUNE_EVERY_SECONDS, one batch of BATCH events a pass,
so a pass never holds the thread that renews the leases for long; a full batch means more
are due, and the next pass (LIVENESS_SECONDS / 6 later) takes the next batch. Processes
racing each other only delete the same rows twice (the second finds none). The run itself
stays (RUN_RETENTION_DAYS is the run's own limit); its stream is then only its end.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Now

from agentbuilder import liveness
from agents.models import RUN_ENDED, RunEvent

logger = logging.getLogger(__name__)

PRUNE = "run-events"
PRUNE_EVERY_SECONDS = 3600.0
BATCH = 5000

_due_at = 0.0  # time.monotonic() of this process's next prune


def register() -> None:
    liveness.register(PRUNE, renew=lambda held: None, sweep=run_events_prune_due)


def run_events_prune_due() -> int:
    """Prune a batch if this process's time for it has come: the events it deleted."""
    global _due_at
    if time.monotonic() < _due_at:
        return 0
    deleted = run_events_prune(BATCH)
    _due_at = time.monotonic() + (0.0 if deleted >= BATCH else PRUNE_EVERY_SECONDS)
    return deleted


def run_events_prune(batch: int = BATCH) -> int:
    """Delete up to `batch` stored events of runs that ended more than RUN_EVENTS_TTL
    seconds ago (in the database's clock): how many it deleted."""
    ended_before = Now() - timedelta(seconds=float(settings.RUN_EVENTS_TTL))
    due = RunEvent.objects.filter(run__status__in=RUN_ENDED, run__completed_at__lt=ended_before)
    deleted, _ = RunEvent.objects.filter(pk__in=due.values("pk")[:batch]).delete()
    if deleted:
        logger.info("%s event(s) of runs ended over RUN_EVENTS_TTL ago: pruned", deleted)
    return deleted
