"""The admin's playground (docs/api.md#playground): try any version of an agent beside its config.

The page is a template and a small script; each turn is a POST to the stream view, a
session-authenticated, CSRF-checked twin of the invoke routes: the same run path, recorded
as a run of the signed-in user with protocol `playground`.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest, QueryDict, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ApiView
from agentbuilder.db import in_db
from agentbuilder.errors import Invalid, NotFound
from agentbuilder.users import User, request_user
from agents.evals.from_runs import playground_settings
from agents.models import Agent, AgentType
from agents.protocols.native.request import ApprovalsBody
from agents.protocols.playground.encoder import PlaygroundEncoder
from agents.protocols.playground.request import PlaygroundRequest
from agents.protocols.views import ProtocolView, streamed
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import Encode
from agents.runtime.events import Event, ResponseCompleted
from agents.selectors.agents import agent_get_invocable
from agents.selectors.aliases import alias_list
from agents.selectors.runs import run_get
from agents.selectors.threads import thread_open
from agents.selectors.versions import version_ref_parse
from agents.services.approvals import StillWaiting, approvals_decide
from agents.services.config_check import config_validate
from agents.services.runs import run_cancel_request
from guardrails.engines.base import KIND_WORDS
from retrieval.selectors import document_titles

PROTOCOL = "playground"
NO_RUN = "00000000-0000-0000-0000-000000000000"  # replaced by the page with a run's id


def playground_page(site: AdminSite, request: HttpRequest, object_id: str) -> TemplateResponse:
    """The page: the agent, its versions (with a task agent's input schema) and the URLs
    the script calls. 404 unless the user may INVOKE the agent."""
    user = request_user(request)
    agent = _invocable(user, object_id)
    context = {
        **site.each_context(request),
        "title": f"Playground: {agent.name}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "is_task": agent.agent_type == AgentType.TASK,
        "settings": {
            "agentId": str(agent.pk),
            "agentType": agent.agent_type,
            "versions": _versions(agent),
            "aliases": [
                {"name": a.name, "number": a.version.number} for a in alias_list(agent=agent)
            ],
            "streamUrl": reverse("admin:agents_agent_playground_stream", args=[agent.pk]),
            "runUrl": reverse("admin:agents_run_change", args=[NO_RUN]),
            "cancelUrl": reverse("admin:agents_agent_playground_cancel", args=[agent.pk, NO_RUN]),
            "runRecordUrl": reverse("admin:agents_agent_playground_run", args=[agent.pk, NO_RUN]),
            "approvalsUrl": reverse(
                "admin:agents_agent_playground_approvals", args=[agent.pk, NO_RUN]
            ),
            "noRun": NO_RUN,
            "kindWords": KIND_WORDS,  # what a guardrail block's notice calls what it found
            # Under each answer: thumbs, and "Add to dataset" (agents/evals/from_runs.py).
            **playground_settings(user, agent, NO_RUN),
            # ?run=<id> or ?thread=<id>: a past conversation to go on with.
            "opened": _opened(user, agent, request.GET),
            # The latest version's config: where "Try without saving"'s draft starts.
            "draftStart": _latest_config(agent),
        },
    }
    return TemplateResponse(request, "admin/agents/agent/playground.html", context)


def _invocable(user: User, object_id: str) -> Agent:
    try:
        return agent_get_invocable(user=user, agent_id=uuid.UUID(object_id))
    except (ValueError, NotFound):
        raise Http404("No agent you may invoke has this id.") from None


def _opened(user: User, agent: Agent, query: QueryDict) -> dict[str, Any] | None:
    run, thread = query.get("run", ""), query.get("thread", "")
    if not run and not thread:
        return None
    try:
        run_id = uuid.UUID(run) if run else None
        return thread_open(user=user, agent=agent, run_id=run_id, thread_id=thread).as_json()
    except (ValueError, NotFound):
        raise Http404("No run or thread of yours with this agent has this id.") from None


def _latest_config(agent: Agent) -> Any:
    """As its author wrote it (their keys in their order), as the editor shows it."""
    latest = agent.versions.order_by("-number").only("config", "config_as_written").first()
    return latest.config_shown if latest is not None else {}


def _versions(agent: Agent) -> list[dict[str, Any]]:
    versions = agent.versions.order_by("-number").only(
        "number", "version_label", "created_at", "config"
    )
    return [
        {
            "number": v.number,
            "label": v.version_label,
            "inputSchema": v.config.get("inputSchema"),
            "outputSchema": v.config.get("outputSchema"),
        }
        for v in versions
    ]


class PlaygroundStreamView(ProtocolView):
    """POST a turn, get NDJSON (agents.protocols.playground). Session and CSRF, like every
    admin form; staff only, like the admin; INVOKE on the agent, like the invoke routes."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]
    protocol = PROTOCOL
    route = "the playground"

    @extend_schema(exclude=True)
    async def post(self, request: Request, object_id: str) -> StreamingHttpResponse:
        invocation, body = await in_db(self._start)(object_id)
        encoder = PlaygroundEncoder(
            invocation.run_id, invocation.answered_by, body.thread_id or "", draft=invocation.draft
        )
        return streamed(invocation, _with_titles(encoder), "application/x-ndjson")

    def _start(self, object_id: str) -> tuple[Invocation, PlaygroundRequest]:
        agent_id = path_uuid(object_id, "object_id", "an agent id")
        body = self.body(PlaygroundRequest)
        agent = agent_get_invocable(user=self.request.user, agent_id=agent_id)
        _check_version(body.version)
        is_task = agent.agent_type == AgentType.TASK
        if not is_task and not (body.message or "").strip():
            raise Invalid.at(("body", "message"), "type a message")
        draft = None
        if body.draft is not None:  # refused as a save would be, before any run exists
            draft = config_validate(
                user=self.request.user,
                environment=agent.environment,
                agent_type=agent.agent_type,
                data=body.draft,
                loc=("body", "draft"),
            )
        request = self.run_request(
            agent.pk,
            body.version,
            # The agent's environment, not a header's: the admin shows every environment.
            environment=agent.environment,
            agent_types=(agent.agent_type,),
            messages=() if is_task else body.messages(),
            inputs=body.inputs if is_task else None,
            thread_id="" if is_task else body.thread_id or "",
            draft=draft,
        )
        return invocation_start(request), body


class PlaygroundApprovalsView(ProtocolView):
    """The playground's Approve / Reject of the calls a turn waits on: POST /v1/runs/{id}/
    approvals's body; the decision that leaves none pending streams the rest of the turn as
    the stream view does (the same run). Session and CSRF, staff only."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]
    protocol = PROTOCOL
    conflicts = True  # decided already, or the run waits no more

    @extend_schema(exclude=True)
    async def post(self, request: Request, object_id: str, run_id: str) -> Any:
        decided = await in_db(self._decide)(object_id, run_id)
        if isinstance(decided, StillWaiting):
            pending = [str(p) for p in decided.pending]
            return Response({"status": "awaiting_approval", "pending": pending}, status=202)
        thread_id = decided.request.thread_id if decided.request is not None else ""
        encoder = PlaygroundEncoder(
            decided.run_id, decided.answered_by, thread_id, draft=decided.draft
        )
        return streamed(decided, _with_titles(encoder), "application/x-ndjson")

    def _decide(self, object_id: str, run_id: str) -> Invocation | StillWaiting:
        agent_id = path_uuid(object_id, "object_id", "an agent id")
        run = path_uuid(run_id, "run_id", "a run id")
        decisions = self.body(ApprovalsBody).decided()
        agent = agent_get_invocable(user=self.request.user, agent_id=agent_id)
        return approvals_decide(
            user=self.request.user, environment=agent.environment, run_id=run, decisions=decisions
        )


class PlaygroundCancelView(ApiView):
    """The playground's Stop: POST asks the turn's run to end `canceled`, wherever it runs
    (as POST /v1/runs/{id}/cancel does): behind a load balancer the POST may reach another
    process than the one streaming the turn, which the run's cancel flag reaches within a
    poll. 202, or the cancel route's 404 and 409. Session and CSRF, staff only."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]
    conflicts = True  # a run that has ended

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str, run_id: str) -> Response:
        agent_id = path_uuid(object_id, "object_id", "an agent id")
        run = path_uuid(run_id, "run_id", "a run id")
        agent = agent_get_invocable(user=self.request.user, agent_id=agent_id)
        asked = run_cancel_request(
            user=self.request.user, environment=agent.environment, run_id=run
        )
        return Response({"id": str(asked.pk), "status": asked.status}, status=202)


class PlaygroundRunView(ApiView):
    """What the footer of an answer shows once its run is recorded: the run's status,
    tokens and cost (GET /v1/runs/{id}'s). Session, staff only; 404 for a run the user may
    not read."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]

    @extend_schema(exclude=True)
    def get(self, request: Request, object_id: str, run_id: str) -> Response:
        agent_id = path_uuid(object_id, "object_id", "an agent id")
        run = path_uuid(run_id, "run_id", "a run id")
        agent = agent_get_invocable(user=self.request.user, agent_id=agent_id)
        recorded = run_get(user=self.request.user, environment=agent.environment, run_id=run)
        cost = recorded.cost_usd
        return Response(
            {
                "id": str(recorded.pk),
                "status": recorded.status,
                "tokensUsage": recorded.tokens_usage,
                "costUsd": None if cost is None else float(cost),
                "draft": recorded.draft_config is not None,
            }
        )


def _check_version(ref: str) -> None:
    try:
        version_ref_parse(ref)
    except Invalid as exc:
        raise Invalid.at(("body", "version"), exc.errors[0].msg) from None


def _with_titles(encoder: PlaygroundEncoder) -> Encode:
    """The encoder's frames, a RAG answer's sources with their documents' titles."""

    async def encode(event: Event) -> list[bytes]:
        if isinstance(event, ResponseCompleted):
            nodes = event.custom_outputs.get("sourceNodes") or ()
            ids = [node["docId"] for node in nodes]
            if ids:  # titles for the sources: one short read after the model is done
                encoder.titles = await in_db(document_titles)(document_ids=ids)
        return encoder.frames(event)

    return encode
