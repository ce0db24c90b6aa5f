"""Celery beat inside the server process, for a deployment without a broker (BEAT_EMBEDDED,
on by default there: `make run`).

Beat reads the schedules (agents.schedules) from the database with the scheduler the
settings name (CELERY_BEAT_SCHEDULER) and sends each tick's task; without a broker the task
runs eagerly, here in beat's thread, and queues its run to this process's runner. Started
at the ASGI lifespan's start-up (agentbuilder.asgi), in the one serving process `make run`
has; a deployment with a broker runs `celery -A agentbuilder beat` once instead. Two beats
do not run a tick twice (agents.schedules.fire), but each would log and query for nothing.
"""

from __future__ import annotations

import logging
import threading

from celery.beat import Service
from django.conf import settings

logger = logging.getLogger(__name__)

# Beat's loop wakes at least this often (seconds): to see a stop, and a schedule changed.
MAX_INTERVAL = 1.0
# After beat failed (the database gone), it starts again after this long.
RESTART_SECONDS = 5.0

_lock = threading.Lock()
_thread: threading.Thread | None = None
_service: Service | None = None
_stopping = threading.Event()


def ensure_started() -> None:
    """Run beat in a thread of this process from now on, once, if BEAT_EMBEDDED."""
    global _thread
    if not settings.BEAT_EMBEDDED:
        return
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _stopping.clear()
        _thread = threading.Thread(target=_run, name="beat", daemon=True)
        _thread.start()


def stop() -> None:
    """Stop the embedded beat (it records what it sent); nothing if none runs."""
    global _thread
    with _lock:
        thread, _thread = _thread, None
        _stopping.set()
        if _service is not None:
            _service.stop()
    if thread is not None:
        thread.join()


def _run() -> None:
    global _service
    from agentbuilder.celery import app

    app.set_current()
    # The apps' task modules, as a worker imports them: beat runs a task it knows (eagerly,
    # here) and would only send one it does not, to a broker there is none of.
    app.loader.import_default_modules()
    while not _stopping.is_set():
        service = Service(app, max_interval=MAX_INTERVAL, scheduler_cls=app.conf.beat_scheduler)
        with _lock:
            _service = service
        try:
            service.start()  # until stopped; it records what it sent as it ends
        except Exception:
            logger.exception("embedded beat stopped; starting again in %ss", RESTART_SECONDS)
            _stopping.wait(RESTART_SECONDS)
        finally:
            # Recorded already: its finalizer would record it again when collected, from
            # whichever thread collects it, closing that thread's database connection.
            finalize = getattr(service.__dict__.get("scheduler"), "_finalize", None)
            if finalize is not None:
                finalize.cancel()
