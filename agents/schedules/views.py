"""Schedules (docs/api.md#schedules): /v1/agents/{id}/schedules and /v1/schedules/{id}.

READ on the agent lists and shows its schedules; EDIT creates, changes and deletes them;
the schedule's owner must hold INVOKE (agents.schedules.services).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, StrictBool, StrictInt
from rest_framework.response import Response

from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.permissions import Action
from agents.api.views import AGENT_ID, PAGE, AgentScopedView
from agents.models import Schedule
from agents.schedules import selectors, services
from agents.schedules.cron import cron_parse
from agents.webhooks.request import WebhookBody

SCHEDULE_ID = OpenApiParameter(
    "scheduleId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Schedule uuid."
)
CRON_DOC = (
    "Five fields, `minute hour day-of-month month day-of-week` (`0 9 * * 1-5`: 09:00 on "
    "weekdays); days of the week 0–6 from Sunday, or `mon`–`sun`."
)
TIMEZONE_DOC = "IANA time zone the cron reads in (`Europe/Paris`); default `UTC`."
VERSION_DOC = (
    "`latest`, a version number or an alias (`prod`), resolved when each tick fires; it must "
    "name a version when the schedule is saved."
)
INPUT_DOC = (
    'The invoke body each run gets: `{"messages": [...]}` (and the chat body\'s other '
    'fields: `guardrails`, `threadId`, …) for tool and RAG agents, `{"inputs": {...}}` for '
    "task agents. Checked as the invoke routes check it when the schedule is saved; errors "
    'are located under `["body", "input", ...]`.'
)
Version = StrictInt | Annotated[str, Field(min_length=1, max_length=100)]

# ---------------------------------------------------------------- bodies


class ScheduleCreate(CamelModel):
    cron: str = Field(min_length=1, max_length=200, description=CRON_DOC)
    timezone: str = Field("UTC", min_length=1, max_length=64, description=TIMEZONE_DOC)
    version: Version = Field("latest", description=VERSION_DOC)
    input: dict[str, Any] = Field(description=INPUT_DOC)
    enabled: StrictBool = Field(True, description="false: paused, no tick fires.")
    webhook: WebhookBody | None = Field(
        None, description="Each run's events also go here (docs/api.md#webhooks)."
    )


class SchedulePatch(CamelModel):
    cron: str | None = Field(None, min_length=1, max_length=200, description=CRON_DOC)
    timezone: str | None = Field(None, min_length=1, max_length=64, description=TIMEZONE_DOC)
    version: Version | None = Field(None, description=VERSION_DOC)
    input: dict[str, Any] | None = Field(None, description=INPUT_DOC)
    enabled: StrictBool | None = None
    webhook: WebhookBody | None = Field(None, description="null removes it.")


class ScheduleOut(OutputModel):
    id: uuid.UUID
    agent_id: uuid.UUID
    cron: str
    timezone: str
    version: int | str
    input: dict[str, Any]
    enabled: bool
    webhook: dict[str, Any] | None
    owner: str = Field(description="Whose runs its ticks start.")
    next_run_at: datetime | None = Field(description="The next tick; null when paused.")
    last_fired_at: datetime | None
    last_run_id: uuid.UUID | None = Field(description="The last run a tick started.")
    last_error: dict[str, Any] | None = Field(
        description="`{code, message}`: why the last tick started no run; null when it did."
    )
    created_at: datetime
    modified_at: datetime

    @classmethod
    def of(cls, schedule: Schedule) -> ScheduleOut:
        return cls(
            id=schedule.pk,
            agent_id=schedule.agent_id,
            cron=schedule.cron,
            timezone=schedule.timezone,
            version=int(schedule.version) if schedule.version.isdigit() else schedule.version,
            input=schedule.input,
            enabled=schedule.enabled,
            webhook=schedule.webhook,
            owner=schedule.owner.get_username(),
            next_run_at=_next_run(schedule),
            last_fired_at=schedule.last_fired_at,
            last_run_id=getattr(schedule, "last_run_id", None),
            last_error=schedule.last_error,
            created_at=schedule.created_at,
            modified_at=schedule.modified_at,
        )


def _next_run(schedule: Schedule) -> datetime | None:
    if not schedule.enabled:
        return None
    now = timezone.now()
    cron = cron_parse(schedule.cron, schedule.timezone)
    return cron.next_tick(max(schedule.tick_after, now), now)


class ScheduleList(OutputModel):
    schedules: list[ScheduleOut]
    pagination: Pagination


# ---------------------------------------------------------------- views


class ScheduleListView(AgentScopedView):
    @extend_schema(
        operation_id="schedules_list",
        parameters=[AGENT_ID, *PAGE, ENVIRONMENT],
        responses={200: ScheduleList},
        tags=["schedules"],
        summary="The agent's schedules, oldest first",
    )
    def get(self, request: ApiRequest, agentId: str) -> Response:
        schedules = selectors.schedule_list(agent=self._agent(agentId))
        items, pagination = paginate(schedules, self.query(PageQuery))
        return render(
            ScheduleList(schedules=[ScheduleOut.of(s) for s in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="schedules_create",
        parameters=[AGENT_ID, ENVIRONMENT],
        request=ScheduleCreate,
        responses={201: ScheduleOut},
        tags=["schedules"],
        summary="Run a version of the agent on a cron, as your background runs",
        description="Needs EDIT on the agent and INVOKE (the runs are yours). A cron that "
        'does not parse is a 400 at `["body", "cron"]`, an unknown time zone at '
        '`["body", "timezone"]`, a version the agent does not have at `["body", "version"]`.',
    )
    def post(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(ScheduleCreate)
        spec = services.ScheduleSpec(
            cron=body.cron,
            timezone=body.timezone,
            version=str(body.version),
            input=body.input,
            enabled=body.enabled,
            webhook=body.webhook,
        )
        schedule = services.schedule_create(user=request.user, agent=agent, spec=spec)
        return render(ScheduleOut.of(schedule), status=201)


class ScheduleDetailView(ApiView):
    def _schedule(self, schedule_id: str, action: Action = Action.READ) -> Schedule:
        return selectors.schedule_get(
            user=self.request.user,
            environment=self.environment,
            schedule_id=path_uuid(schedule_id, "scheduleId", "a schedule id"),
            action=action,
        )

    @extend_schema(
        operation_id="schedules_get",
        parameters=[SCHEDULE_ID, ENVIRONMENT],
        responses={200: ScheduleOut},
        tags=["schedules"],
    )
    def get(self, request: ApiRequest, scheduleId: str) -> Response:
        return render(ScheduleOut.of(self._schedule(scheduleId)))

    @extend_schema(
        operation_id="schedules_update",
        parameters=[SCHEDULE_ID, ENVIRONMENT],
        request=SchedulePatch,
        responses={200: ScheduleOut},
        tags=["schedules"],
        summary="Change, pause (`enabled: false`) or resume a schedule",
        description="Needs EDIT on the agent. Whoever changes what it runs (`version`, "
        "`input`, `webhook`) becomes its owner, and must hold INVOKE; a resumed schedule "
        "fires from its next tick, never for those it missed while paused.",
    )
    def patch(self, request: ApiRequest, scheduleId: str) -> Response:
        schedule = self._schedule(scheduleId, Action.EDIT)
        body = self.body(SchedulePatch)
        changes = {
            name: getattr(body, name)
            for name in body.model_fields_set
            if name == "webhook" or getattr(body, name) is not None
        }
        if "version" in changes:
            changes["version"] = str(changes["version"])
        spec = replace(services.spec_of(schedule), **changes)
        schedule = services.schedule_update(user=request.user, schedule=schedule, spec=spec)
        return render(ScheduleOut.of(schedule))

    @extend_schema(
        operation_id="schedules_delete",
        parameters=[SCHEDULE_ID, ENVIRONMENT],
        responses={204: None},
        tags=["schedules"],
        summary="Delete a schedule (its runs stay)",
    )
    def delete(self, request: ApiRequest, scheduleId: str) -> Response:
        services.schedule_delete(schedule=self._schedule(scheduleId, Action.EDIT))
        return Response(status=204)
