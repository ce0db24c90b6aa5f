"""A schedule's tick (agents/schedules/fire.py), fired as beat fires it: a background run of
the schedule's owner; each tick once, however often beat sends it; ticks missed while beat
was down once together; none while paused; a refused owner a failed run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from guardian.shortcuts import remove_perm

from agents.access.permissions import Action, grant
from agents.models import Agent, Run, Schedule
from agents.schedules.services import schedule_update, spec_of
from agents.services.aliases import alias_delete, alias_set
from agents.services.versions import version_add
from agents.tasks import schedule_tick
from tests.conftest import client_for
from tests.factories import CALCULATOR_CONFIG, UserFactory
from tests.support.schedules import driven_beat, overdue_schedule, runs_of

pytestmark = [
    # The runs run in this process's runner threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


@pytest.fixture
def member(env: Any) -> Any:
    """A user with READ, EDIT and INVOKE in the environment: a schedule's owner."""
    user = UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(user, action, env)
    return user


def test_a_due_tick_starts_a_background_run_of_the_owner(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member)

    run_id = schedule_tick.delay(str(schedule.pk)).get()

    [run] = runs_of(schedule, 1)
    assert str(run.pk) == run_id
    assert (run.caller, run.protocol, run.status) == (member, "schedule", "completed")
    assert run.version == calc.versions.get(number=1)
    assert run.output
    schedule.refresh_from_db()
    assert schedule.last_fired_at is not None
    assert schedule.last_error is None


def test_ticks_missed_while_beat_was_down_run_once(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member, missed_hours=3)  # three hourly ticks missed
    task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id)

    with driven_beat() as passes:
        passes(5)

    assert len(runs_of(schedule, 1)) == 1
    assert task.get().total_run_count == 1  # sent once, and recorded


def test_a_beat_killed_before_it_recorded_its_send_sends_again_and_nothing_runs_twice(
    calc: Agent, member: Any
) -> None:
    schedule = overdue_schedule(calc, member, missed_hours=3)
    task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id)
    with driven_beat() as passes:
        passes(1)
    runs_of(schedule, 1)
    # As a beat killed between sending the tick and recording it leaves its row.
    task.update(last_run_at=timezone.now() - timedelta(hours=3), total_run_count=0)

    with driven_beat() as passes:
        passes(5)

    assert task.get().total_run_count == 1  # the restarted beat sent the tick again
    assert len(runs_of(schedule, 1)) == 1


def test_a_tick_sent_twice_runs_once(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member)

    first = schedule_tick.delay(str(schedule.pk)).get()
    second = schedule_tick.delay(str(schedule.pk)).get()

    assert first is not None
    assert second is None
    assert len(runs_of(schedule, 1)) == 1


def test_a_paused_schedule_does_not_fire(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member)
    schedule_update(
        user=member,
        schedule=schedule,
        spec=replace(spec_of(schedule), enabled=False),
    )

    with driven_beat() as passes:
        passes(5)
    # A beat that read the schedule before it was paused still sends its tick: not run.
    sent_anyway = schedule_tick.delay(str(schedule.pk)).get()

    assert sent_anyway is None
    assert not Run.objects.exists()
    # Its own task only: beat also writes the platform's (CELERY_BEAT_SCHEDULE: the prune).
    assert not PeriodicTask.objects.get(pk=schedule.periodic_task_id).enabled


def test_a_resumed_schedule_does_not_run_the_ticks_it_missed_while_paused(
    calc: Agent, member: Any
) -> None:
    schedule = overdue_schedule(calc, member)
    paused = schedule_update(
        user=member,
        schedule=schedule,
        spec=replace(spec_of(schedule), enabled=False),
    )
    schedule_update(user=member, schedule=paused, spec=spec_of(schedule))

    with driven_beat() as passes:
        passes(5)

    assert schedule_tick.delay(str(schedule.pk)).get() is None
    assert not Run.objects.exists()


def test_the_alias_is_resolved_when_each_tick_fires(
    calc: Agent, member: Any, admin_user: Any
) -> None:
    alias_set(user=admin_user, agent=calc, name="prod", version_number=1)
    schedule = overdue_schedule(calc, member, version="prod")
    version_add(user=admin_user, agent=calc, config=CALCULATOR_CONFIG)
    alias_set(user=admin_user, agent=calc, name="prod", version_number=2)

    schedule_tick.delay(str(schedule.pk)).get()

    [run] = runs_of(schedule, 1)
    assert run.version.number == 2


def test_an_owner_who_lost_invoke_gets_a_failed_run(calc: Agent, member: Any, env: Any) -> None:
    schedule = overdue_schedule(calc, member)
    remove_perm(str(Action.INVOKE), member, env)

    assert schedule_tick.delay(str(schedule.pk)).get() is None

    [run] = runs_of(schedule, 1)
    assert (run.status, run.caller, run.protocol) == ("failed", member, "schedule")
    assert run.error is not None
    assert run.error["code"] == "forbidden"
    schedule.refresh_from_db()
    assert schedule.last_error == run.error


def test_an_alias_deleted_since_is_the_schedules_last_error(
    calc: Agent, member: Any, admin_user: Any
) -> None:
    alias_set(user=admin_user, agent=calc, name="prod", version_number=1)
    schedule = overdue_schedule(calc, member, version="prod")
    alias_delete(user=admin_user, agent=calc, name="prod")

    assert schedule_tick.delay(str(schedule.pk)).get() is None

    assert not Run.objects.exists()
    schedule.refresh_from_db()
    assert schedule.last_error is not None
    assert "prod" in schedule.last_error["message"]


def test_a_tick_of_a_schedule_gone_removes_its_periodic_task(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member)
    Schedule.objects.filter(pk=schedule.pk).delete()  # as its agent's hard delete does

    assert schedule_tick.delay(str(schedule.pk)).get() is None

    assert not PeriodicTask.objects.exists()


def test_the_runs_list_shows_a_schedules_runs(calc: Agent, member: Any) -> None:
    schedule = overdue_schedule(calc, member)
    other = overdue_schedule(calc, member)
    schedule_tick.delay(str(schedule.pk)).get()
    schedule_tick.delay(str(other.pk)).get()
    [run] = runs_of(schedule, 1)

    listed = client_for(member).get(f"/v1/runs?scheduleId={schedule.pk}")

    assert [r["id"] for r in listed.json()["runs"]] == [str(run.pk)]
    assert listed.json()["runs"][0]["scheduleId"] == str(schedule.pk)
    runs_of(other, 1)


def test_a_ticks_run_carries_the_schedules_webhook(calc: Agent, member: Any, settings: Any) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["run.failed"]}
    schedule = overdue_schedule(calc, member, webhook=hook)

    schedule_tick.delay(str(schedule.pk)).get()

    [run] = runs_of(schedule, 1)
    assert run.webhook == hook
