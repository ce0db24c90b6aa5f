"""A schedule's tick: the background run it starts as the schedule's owner.

Beat sends a tick when the cron says so (agents.schedules.beat); this decides whether it
runs. Each tick starts one run at most, whatever beat does: the schedule's row says which
ticks are done (`tick_after`), and a tick claims its own under the row's lock before its
run is queued. So a tick beat sends twice (a beat restarted before it wrote that it sent
it, or a second beat by mistake) runs once, and ticks missed while beat was down run once
together when it is back (beat sends the overdue tick once; it covers every tick up to
then). A tick is claimed before its run is queued: a process that dies between the two
loses that tick, never runs it twice.

The owner is checked as every caller is, when the run is queued. A tick whose owner may no
longer run the agent (INVOKE lost, the user deactivated) records a failed run,
`forbidden`, so the schedule's runs show it; one that cannot even name a version (the
alias deleted) records why on the schedule (`lastError`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agentbuilder.errors import DomainError, Invalid, NotFound, PermissionDenied
from agents.budgets.gate import BudgetExceeded
from agents.models import Run, RunStatus, Schedule
from agents.runs.background import run_queue
from agents.runtime.failures import FailureCode
from agents.schedules.cron import cron_parse
from agents.schedules.request import PROTOCOL, run_request
from agents.schedules.services import owner_check
from agents.selectors.versions import version_get

logger = logging.getLogger(__name__)

# How far beat's clock may run ahead of the database's: a tick sent that early still
# counts as due. Less than a minute, the shortest step of a cron, so that it never makes
# the next tick due too.
CLOCK_SKEW = timedelta(seconds=20)


def schedule_fire(*, schedule_id: uuid.UUID) -> uuid.UUID | None:
    """Start the run of the schedule's due tick, a background run of its owner; the run's
    id, or None when no run was queued (no tick due, the schedule paused or gone, or its
    run refused: see the module's docstring)."""
    schedule = _claim(schedule_id)
    if schedule is None:
        return None
    request = run_request(
        owner=schedule.owner,
        environment=schedule.agent.environment,
        agent_id=schedule.agent_id,
        agent_type=schedule.agent.agent_type,
        version=schedule.version,
        stored=schedule.input,
        schedule_id=schedule.pk,
        webhook=schedule.webhook,
    )
    try:
        # Outside the claim's transaction: the worker must find the queued run's row.
        run_id = run_queue(request)
    except (NotFound, PermissionDenied) as exc:
        _refused(schedule, exc.detail)
        return None
    except BudgetExceeded as exc:  # no run: a budget of its agent or owner is spent
        _outcome(schedule, {"code": exc.code.value, "message": exc.detail})
        return None
    except (Invalid, DomainError) as exc:  # the run `failed` with the reason (or, its
        # webhook's address refused now, never written)
        _outcome(schedule, {"code": FailureCode.INVALID_REQUEST.value, "message": str(exc)})
        return None
    _outcome(schedule, None)
    return run_id


def _claim(schedule_id: uuid.UUID) -> Schedule | None:
    """The schedule, its due tick marked done; None when none is due."""
    with transaction.atomic():
        schedule = (
            Schedule.objects.select_for_update(of=("self",))
            .select_related("agent__environment", "owner")
            .annotate(now=Now())
            .filter(pk=schedule_id)
            .first()
        )
        if schedule is None:
            # Its agent was deleted with it, or it was deleted while beat had it loaded.
            PeriodicTask.objects.filter(name=f"schedule {schedule_id}").delete()
            return None
        if not schedule.enabled:
            return None
        now: datetime = schedule.now
        cron = cron_parse(schedule.cron, schedule.timezone)
        tick = cron.next_tick(schedule.tick_after, now)
        if tick > now + CLOCK_SKEW:
            logger.info("schedule %s: no tick due (next %s); not run", schedule_id, tick)
            return None
        # Every tick up to now is this one's: those missed while beat was down run once.
        schedule.tick_after = max(now, tick)
        schedule.last_fired_at = now
        Schedule.objects.filter(pk=schedule.pk).update(
            tick_after=schedule.tick_after, last_fired_at=now
        )
        return schedule


def _outcome(schedule: Schedule, error: dict[str, str] | None) -> None:
    Schedule.objects.filter(pk=schedule.pk).update(last_error=error)


def _refused(schedule: Schedule, detail: str) -> None:
    """The tick's run was refused before it existed: record it as a failed run when the
    version still exists (the owner's INVOKE lost, mostly), else on the schedule."""
    agent = schedule.agent
    code, message = FailureCode.INVALID_REQUEST, detail
    if agent.deleted_at is None:
        try:
            owner_check(schedule.owner, agent, own=False)
        except PermissionDenied as exc:
            code, message = FailureCode.FORBIDDEN, exc.detail
    error = {"code": code.value, "message": message}
    try:
        version = version_get(agent=agent, ref=schedule.version)
    except (Invalid, NotFound):
        _outcome(schedule, error)
        return
    Run.objects.create(
        agent=agent,
        version=version,
        caller=schedule.owner,
        protocol=PROTOCOL,
        status=RunStatus.FAILED,
        completed_at=timezone.now(),
        latency_ms=0,
        error=error,
        schedule=schedule,
    )
    _outcome(schedule, error)
