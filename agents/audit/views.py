"""The audit log in the API (docs/api.md#audit-log): `GET /v1/audit`, the records of the
request's environment, newest first, for AUDIT holders on it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from drf_spectacular.utils import extend_schema
from pydantic import AwareDatetime, BeforeValidator, Field, model_validator
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.errors import Invalid
from agentbuilder.wire import OutputModel
from agents.audit import selectors
from agents.audit.selectors import AuditFilter
from agents.models import AuditRecord

ObjectType = Literal[
    "agent",
    "version",
    "alias",
    "gate",
    "permission",
    "apiclient",
    "mcpserver",
    "budget",
    "dataset",
    "agentwebhook",
    "environment",
    "user",
    "oauthclient",
]
Surface = Literal["api", "admin", "import", "other"]


def _iso(value: object) -> object:
    # The document says an ISO 8601 date-time; pydantic alone also takes a number, as
    # seconds since 1970 (`to=0.5` read as a moment of 1970).
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("an ISO 8601 date-time (2026-11-01T09:30:00Z)") from None
    return value


IsoTime = Annotated[AwareDatetime, BeforeValidator(_iso)]


class AuditQuery(PageQuery):
    object_type: ObjectType | None = None
    object_id: str | None = Field(None, max_length=64)
    actor_id: int | None = Field(None, gt=0, le=2**31 - 1)
    action: str | None = Field(None, max_length=40)
    from_: IsoTime | None = Field(None, alias="from")
    to: IsoTime | None = None

    @model_validator(mode="after")
    def _ordered(self) -> AuditQuery:
        if self.from_ is not None and self.to is not None and self.to <= self.from_:
            raise Invalid.at(("to",), "must be after 'from'")
        return self

    def where(self) -> AuditFilter:
        return AuditFilter(
            object_type=self.object_type,
            object_id=self.object_id,
            actor_id=self.actor_id,
            action=self.action,
            since=self.from_,
            until=self.to,
        )


class ActorOut(OutputModel):
    id: int | None = Field(description="Null once the user is deleted; the name stays.")
    name: str


class ObjectOut(OutputModel):
    type: str
    id: str
    repr: str


class AuditRecordOut(OutputModel):
    id: int
    environment_id: str | None
    actor: ActorOut | None = Field(description="Null: a change no user made (a command).")
    action: str = Field(
        description="`create`, `update`, `delete`, `alias.set`, `alias.delete`, `gate.set`, "
        "`gate.delete`, `permission.grant`, `permission.revoke`, `secret.rotate`, `cases.add`, "
        "`cases.remove`, `cases.replace`, `webhook_secret.rotate` (docs/api.md#audit-log)."
    )
    object: ObjectOut
    changes: dict[str, dict[str, Any]] = Field(
        description='`{field: {"from", "to"}}`; a secret\'s values are `"changed"`.'
    )
    at: datetime
    ip: str | None
    surface: Surface

    @classmethod
    def of(cls, record: AuditRecord) -> AuditRecordOut:
        actor = None
        if record.actor_id is not None or record.actor_name:
            actor = ActorOut(id=record.actor_id, name=record.actor_name)
        return cls(
            id=record.pk,
            environment_id=None if record.environment_id is None else str(record.environment_id),
            actor=actor,
            action=record.action,
            object=ObjectOut(type=record.object_type, id=record.object_id, repr=record.object_repr),
            changes=record.changes,
            at=record.at,
            ip=record.ip,
            surface=record.surface,
        )


class AuditList(OutputModel):
    records: list[AuditRecordOut]
    pagination: Pagination


class AuditListView(ApiView):
    @extend_schema(
        operation_id="audit_list",
        parameters=[
            *query_parameters(
                AuditQuery,
                objectId="The object's id (a uuid, or a number for an alias).",
                actorId="The user who made the changes.",
                action="See docs/api.md#audit-log for every action.",
                **{"from": "Records at or after this time (with its offset)."},
                to="Records before this time.",
            ),
            ENVIRONMENT,
        ],
        responses={200: AuditList},
        tags=["audit"],
        summary="The environment's audit log: every recorded change, newest first",
        description="Needs AUDIT on the environment.",
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(AuditQuery)
        records = selectors.audit_list(
            user=request.user, environment=self.environment, where=query.where()
        )
        items, pagination = paginate(records, query)
        return render(
            AuditList(records=[AuditRecordOut.of(r) for r in items], pagination=pagination)
        )
