"""The scheduler beat runs (agents/schedules/beat.py): every schedule's cron is loaded,
whatever its hour, so a tick missed while beat was down is sent as soon as it is back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.schedulers import DatabaseScheduler

from agentbuilder.celery import app
from agents.models import Agent
from agents.schedules.beat import ScheduleScheduler
from agents.schedules.services import ScheduleSpec, schedule_create
from tests.support.schedules import ASK

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
    far_hour = (timezone.now() + timedelta(hours=12)).hour
    spec = ScheduleSpec(cron=f"0 {far_hour} * * *", input=ASK)
    schedule = schedule_create(user=admin_user, agent=make_agent(), spec=spec)
    name = f"schedule {schedule.pk}"

    assert name in loaded(ScheduleScheduler)
    # django-celery-beat's own leaves it out until two hours before its hour: a tick it
    # missed would be sent then, early, and again on time.
    assert name not in loaded(DatabaseScheduler)


def test_beat_uses_it() -> None:
    assert app.conf.beat_scheduler == "agents.schedules.beat:ScheduleScheduler"
