"""Webhooks in the API (docs/api.md#webhooks): an agent's webhooks (READ lists and shows,
EDIT creates, changes and deletes) and the environment's signing secret (EDIT on the
environment rotates it; the answer is the only place it is shown)."""

from __future__ import annotations

import uuid
from datetime import datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, StrictBool
from rest_framework.response import Response

from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.permissions import Action, require_on_environment
from agents.api.views import AGENT_ID, AgentScopedView
from agents.models import AgentWebhook
from agents.webhooks import selectors, services
from agents.webhooks.events import RUN_END_EVENTS, WebhookEvent
from agents.webhooks.secret import environment_secret_rotate

WEBHOOK_ID = OpenApiParameter(
    "webhookId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Webhook uuid."
)
EVENTS_DOC = (
    "The events sent to `url`: `run.completed`, `run.failed`, `run.canceled` (the default: "
    "all three), `run.awaiting_approval` (a run waits for approvals), `budget.warning` (a "
    "budget at 80 % and 100 %) and `experiment.completed`."
)


class WebhookCreate(CamelModel):
    url: str = Field(
        min_length=1, max_length=2000, description="http(s); passes the address guard."
    )
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list(RUN_END_EVENTS),
        min_length=1,
        max_length=len(WebhookEvent),
        description=EVENTS_DOC,
    )
    description: str = Field("", max_length=200)
    enabled: StrictBool = True


class WebhookPatch(CamelModel):
    url: str | None = Field(None, min_length=1, max_length=2000)
    events: list[WebhookEvent] | None = Field(
        None, min_length=1, max_length=len(WebhookEvent), description=EVENTS_DOC
    )
    description: str | None = Field(None, max_length=200)
    enabled: StrictBool | None = None


class WebhookOut(OutputModel):
    id: uuid.UUID
    agent_id: uuid.UUID
    url: str
    events: list[str]
    description: str
    enabled: bool
    created_at: datetime

    @classmethod
    def of(cls, webhook: AgentWebhook) -> WebhookOut:
        return cls(
            id=webhook.pk,
            agent_id=webhook.agent_id,
            url=webhook.url,
            events=list(webhook.events),
            description=webhook.description,
            enabled=webhook.enabled,
            created_at=webhook.created_at,
        )


class WebhookList(OutputModel):
    webhooks: list[WebhookOut]


class WebhookSecretOut(OutputModel):
    environment_id: uuid.UUID
    secret: str = Field(
        description="`whsec_…`: verify deliveries with it (any Standard Webhooks library). "
        "Shown this once; it signs every delivery from the next attempt on."
    )


class WebhookListView(AgentScopedView):
    @extend_schema(
        operation_id="webhooks_list",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: WebhookList},
        tags=["webhooks"],
        summary="The agent's webhooks",
    )
    def get(self, request: ApiRequest, agentId: str) -> Response:
        webhooks = selectors.agent_webhook_list(agent=self._agent(agentId))
        return render(WebhookList(webhooks=[WebhookOut.of(w) for w in webhooks]))

    @extend_schema(
        operation_id="webhooks_create",
        parameters=[AGENT_ID, ENVIRONMENT],
        request=WebhookCreate,
        responses={201: WebhookOut},
        tags=["webhooks"],
        summary="Send the events of every run of the agent to a URL",
        description='A URL the address guard refuses is a 400 at `["body", "url"]`.',
    )
    def post(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(WebhookCreate)
        webhook = services.agent_webhook_create(
            user=request.user,
            agent=agent,
            url=body.url,
            events=body.events,
            description=body.description,
            enabled=body.enabled,
        )
        return render(WebhookOut.of(webhook), status=201)


class WebhookDetailView(AgentScopedView):
    def _webhook(self, agent_id: str, webhook_id: str, action: Action) -> AgentWebhook:
        return selectors.agent_webhook_get(
            agent=self._agent(agent_id, action),
            webhook_id=path_uuid(webhook_id, "webhookId", "a webhook id"),
        )

    @extend_schema(
        operation_id="webhooks_get",
        parameters=[AGENT_ID, WEBHOOK_ID, ENVIRONMENT],
        responses={200: WebhookOut},
        tags=["webhooks"],
    )
    def get(self, request: ApiRequest, agentId: str, webhookId: str) -> Response:
        return render(WebhookOut.of(self._webhook(agentId, webhookId, Action.READ)))

    @extend_schema(
        operation_id="webhooks_update",
        parameters=[AGENT_ID, WEBHOOK_ID, ENVIRONMENT],
        request=WebhookPatch,
        responses={200: WebhookOut},
        tags=["webhooks"],
    )
    def patch(self, request: ApiRequest, agentId: str, webhookId: str) -> Response:
        webhook = self._webhook(agentId, webhookId, Action.EDIT)
        body = self.body(WebhookPatch)
        webhook = services.agent_webhook_update(
            user=request.user,
            webhook=webhook,
            url=body.url,
            events=body.events,
            description=body.description,
            enabled=body.enabled,
        )
        return render(WebhookOut.of(webhook))

    @extend_schema(
        operation_id="webhooks_delete",
        parameters=[AGENT_ID, WEBHOOK_ID, ENVIRONMENT],
        responses={204: None},
        tags=["webhooks"],
    )
    def delete(self, request: ApiRequest, agentId: str, webhookId: str) -> Response:
        webhook = self._webhook(agentId, webhookId, Action.EDIT)
        services.agent_webhook_delete(user=request.user, webhook=webhook)
        return Response(status=204)


class WebhookSecretView(ApiView):
    @extend_schema(
        operation_id="webhook_secret_rotate",
        parameters=[ENVIRONMENT],
        request=None,
        responses={200: WebhookSecretOut},
        tags=["webhooks"],
        summary="A new webhook signing secret for the environment, shown once",
        description="Needs EDIT on the environment. The old secret signs nothing from now "
        "on: attempts after this one carry the new one.",
    )
    def post(self, request: ApiRequest) -> Response:
        environment = self.environment
        require_on_environment(request.user, environment, Action.EDIT)
        secret = environment_secret_rotate(environment_id=environment.pk, user=request.user)
        return render(WebhookSecretOut(environment_id=environment.pk, secret=secret))
