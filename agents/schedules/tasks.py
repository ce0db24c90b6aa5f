"""The Celery task beat sends at a schedule's tick: it translates the message into the
tick's service call, nothing more."""

from __future__ import annotations

import uuid

from celery import shared_task

from agents.schedules.fire import schedule_fire
from agents.schedules.services import TICK_TASK


# Not retried, not acknowledged late: a tick is claimed once (agents.schedules.fire), and
# a tick lost with its worker is one run missed, not one run twice.
@shared_task(name=TICK_TASK, ignore_result=True)
def schedule_tick(schedule_id: str) -> str | None:
    run_id = schedule_fire(schedule_id=uuid.UUID(schedule_id))
    return None if run_id is None else str(run_id)
