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
def _sweep_from_start_up(**kwargs: Any) -> None:
    from agentbuilder import liveness

    liveness.ensure_started()


@signals.worker_init.connect
def _sweep_once_the_fixup_closed_the_pool(**kwargs: Any) -> None:
    """Receivers run in the order they were connected. Celery's Django fixup connects its
    own worker_process_init receiver here, at worker_init (its receiver of worker_init was
    connected with the app, before ours), and that receiver closes a prefork child's
    connections and its connection pool (`close_pool`), as the parent's must not be shared.
    Connected at import, ours ran first: the liveness thread it starts was already taking a
    connection from the child's first pool when the fixup closed it ("the pool 'pool-1' is
    closed"), or between the pool's open and its getconn, a pool made anew and never
    opened ("the pool ... is not open yet"); a busy machine's children logged either at
    start-up (bench/background_scaleout.py --pool prefork). Connected from here, ours runs
    after the fixup's: the thread starts on a pool nobody closes."""
    signals.worker_process_init.connect(_sweep_from_start_up, dispatch_uid=__name__ + ".sweep")


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
