"""Writes of schedules (docs/api.md#schedules): create, change, delete, each with the
PeriodicTask and CrontabSchedule rows beat reads, in the same transaction.

EDIT on the agent creates, changes and deletes its schedules. A schedule's runs are its
owner's: who created it, or who last changed what it runs (its version, input or webhook),
so nobody makes a schedule run as someone else with input they chose. The owner must hold
INVOKE whenever the schedule is saved enabled, and again at each tick (agents.schedules.fire).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agentbuilder.errors import PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import Action, agent_with_held
from agents.models import Agent, Schedule
from agents.schedules.cron import FIELDS, Cron, cron_parse
from agents.schedules.request import input_check, version_check, webhook_stored

TICK_TASK = "agents.schedule_tick"  # the Celery task beat sends (agents.tasks)


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule as its author writes it, from the API's body or the admin's form."""

    cron: str
    input: Any
    timezone: str = "UTC"
    version: str = "latest"
    enabled: bool = True
    webhook: Any = None


def spec_of(schedule: Schedule) -> ScheduleSpec:
    """What `schedule` is, as a spec to change and save again."""
    return ScheduleSpec(
        cron=schedule.cron,
        timezone=schedule.timezone,
        version=schedule.version,
        input=schedule.input,
        enabled=schedule.enabled,
        webhook=schedule.webhook,
    )


@dataclass(frozen=True)
class _Checked:
    cron: Cron
    input: dict[str, Any]
    webhook: dict[str, Any] | None


def _check(agent: Agent, spec: ScheduleSpec) -> _Checked:
    cron = cron_parse(spec.cron, spec.timezone)
    version = version_check(agent=agent, version=spec.version)
    stored = input_check(agent=agent, version=version, data=spec.input)
    return _Checked(cron, stored, webhook_stored(spec.webhook))


@transaction.atomic
def schedule_create(*, user: User, agent: Agent, spec: ScheduleSpec) -> Schedule:
    """A schedule of `agent` owned by `user` (its caller's EDIT is the view's to check).
    Raises Invalid (at the body's field) or PermissionDenied (no INVOKE)."""
    checked = _check(agent, spec)
    owner_check(user, agent, own=True)
    schedule = Schedule(
        agent=agent,
        owner=user,
        cron=spec.cron.strip(),
        timezone=spec.timezone,
        version=spec.version,
        input=checked.input,
        webhook=checked.webhook,
        enabled=spec.enabled,
    )
    schedule.periodic_task = _beat_write(schedule, checked.cron, restart=True)
    schedule.save()
    return schedule


@transaction.atomic
def schedule_update(*, user: User, schedule: Schedule, spec: ScheduleSpec) -> Schedule:
    """Change a schedule to `spec` (its caller's EDIT is the view's to check). Raises
    Invalid or PermissionDenied (the owner, maybe `user` now, without INVOKE)."""
    # The row a tick locks too: a change and a tick take turns.
    locked = Schedule.objects.select_for_update().select_related("owner").get(pk=schedule.pk)
    agent = schedule.agent
    checked = _check(agent, spec)
    runs = (spec.version, checked.input, checked.webhook)
    if runs != (locked.version, locked.input, locked.webhook):
        locked.owner = user
    if spec.enabled:
        owner_check(locked.owner, agent, own=locked.owner == user)
    cron = spec.cron.strip()
    # Ticks before now are not this schedule's to run: not those of a cron it no longer
    # has, nor those it missed while paused.
    restart = (cron, spec.timezone) != (locked.cron, locked.timezone) or (
        spec.enabled and not locked.enabled
    )
    if restart:
        locked.tick_after = timezone.now()
    locked.cron, locked.timezone, locked.version = cron, spec.timezone, spec.version
    locked.input, locked.webhook, locked.enabled = checked.input, checked.webhook, spec.enabled
    _beat_write(locked, checked.cron, restart=restart)
    locked.save()
    locked.agent = agent
    locked.last_run_id = getattr(schedule, "last_run_id", None)  # type: ignore[attr-defined]
    return locked


@transaction.atomic
def schedule_delete(*, schedule: Schedule) -> None:
    """Delete a schedule and its beat rows; its runs stay (no longer linked)."""
    task = PeriodicTask.objects.select_related("crontab").get(pk=schedule.periodic_task_id)
    schedule.delete()
    task.delete()  # the model's delete: it tells beat its schedule changed
    if task.crontab is not None:
        task.crontab.delete()


def schedules_delete_for_agent(*, agent: Agent) -> None:
    """Delete every schedule of `agent` (which is being deleted)."""
    for schedule in Schedule.objects.filter(agent=agent):
        schedule_delete(schedule=schedule)


def owner_check(owner: User, agent: Agent, *, own: bool) -> None:
    """Nothing if `owner` (active) holds INVOKE on `agent`. Raises PermissionDenied,
    worded for the owner itself (`own`) or for another who changes its schedule."""
    found = agent_with_held(owner, agent.pk) if owner.is_active else None
    if found is not None and Action.INVOKE in found.held:
        return
    if own:
        raise PermissionDenied(
            f"You do not have {Action.INVOKE.name} permission on this agent: a schedule's "
            "runs are its owner's."
        )
    raise PermissionDenied(
        f"The schedule's owner '{owner.get_username()}' may not {Action.INVOKE.name} this "
        "agent: pause the schedule, or change what it runs to make it yours."
    )


def _beat_write(schedule: Schedule, cron: Cron, *, restart: bool) -> PeriodicTask:
    """Beat's rows for `schedule`, created or brought in step with it: its cron in its zone,
    enabled as it is. `restart`: beat counts ticks from now, as the schedule does."""
    task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id).first()
    if task is None:
        task = PeriodicTask(name=f"schedule {schedule.pk}", task=TICK_TASK)
    crontab = task.crontab or CrontabSchedule()
    for name in FIELDS:
        setattr(crontab, name, getattr(cron, name))
    crontab.timezone = cron.zone
    crontab.save()
    task.crontab = crontab
    task.kwargs = json.dumps({"schedule_id": str(schedule.pk)})
    task.enabled = schedule.enabled
    task.description = f"Schedule {schedule.pk} of agent {schedule.agent_id}"
    if restart:
        task.last_run_at = timezone.now()
    task.save()  # its save tells beat its schedule changed
    return task
