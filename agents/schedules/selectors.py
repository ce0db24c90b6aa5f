"""Reads of schedules: an agent's, and one by id, as the caller may see them (READ on the
schedule's agent, in the request's environment)."""

from __future__ import annotations

import uuid

from django.db.models import OuterRef, QuerySet, Subquery

from agentbuilder.errors import NotFound
from agentbuilder.users import User
from agents.access.permissions import Action
from agents.models import Agent, Environment, Run, Schedule
from agents.selectors.agents import agent_get


def _with_last_run(schedules: QuerySet[Schedule]) -> QuerySet[Schedule]:
    last = Run.objects.filter(schedule=OuterRef("pk")).order_by("-started_at", "-id")
    return schedules.select_related("owner").annotate(last_run_id=Subquery(last.values("id")[:1]))


def schedule_list(*, agent: Agent) -> QuerySet[Schedule]:
    """The schedules of `agent`, oldest first, with the id of each one's last run."""
    return _with_last_run(agent.schedules.all()).order_by("created_at", "id")


def schedule_get(
    *, user: User, environment: Environment, schedule_id: uuid.UUID, action: Action = Action.READ
) -> Schedule:
    """One schedule of an agent of `environment` the caller may READ, and act on as
    `action` (EDIT to change or delete it). Raises NotFound or PermissionDenied."""
    schedule = _with_last_run(Schedule.objects.filter(pk=schedule_id)).first()
    if schedule is None:
        raise NotFound(f"Schedule '{schedule_id}' not found.")
    try:
        schedule.agent = agent_get(
            user=user, environment=environment, agent_id=schedule.agent_id, action=action
        )
    except NotFound:
        raise NotFound(f"Schedule '{schedule_id}' not found.") from None
    return schedule
