"""The Celery app. Without CELERY_BROKER_URL tasks run in the calling process (eager)."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

app = Celery("agentbuilder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A worker renews its leases and sweeps dead processes' runs and documents from start-up
# (agentbuilder.liveness), not from its first task: a restarted worker with an empty queue
# still closes what the process it replaced left in progress. In each process that runs
# tasks: a prefork pool's children (after the fork, as the database connections they open
# must not be shared), the solo pool's worker itself.
@signals.worker_process_init.connect
def _sweep_from_start_up(**kwargs: Any) -> None:
    from agentbuilder import liveness

    liveness.ensure_started()


@signals.worker_ready.connect
def _sweep_from_start_up_unforked(sender: Any = None, **kwargs: Any) -> None:
    """Pools that never fork (threads, gevent, eventlet) send no worker_process_init."""
    from celery.concurrency.prefork import TaskPool as Prefork

    from agentbuilder import liveness

    if not isinstance(getattr(sender, "pool", None), Prefork):
        liveness.ensure_started()


@signals.worker_shutting_down.connect
def _grace_for_running_runs(**kwargs: Any) -> None:
    """A warm shutdown waits for the running tasks, a background run's until the run ends:
    past SHUTDOWN_GRACE_SECONDS its run is ended `interrupted` (agentbuilder.shutdown), and
    the worker takes no more queued runs meanwhile."""
    from agentbuilder import shutdown

    shutdown.begin()
