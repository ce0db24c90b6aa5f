"""POST /v1/agents/{agentId}/versions/{versionId}/process: the agent API protocol
(seeds/agent-api-protocol.txt, docs/api.md#process).

`stream` (default true) answers server-sent events, one protocol object each; otherwise
one response object. Every error leaves in the protocol's style, a response with
`status: failed` and `error {code, message}`, under the status code of docs/api.md#errors.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from pydantic import RootModel
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import ENVIRONMENT
from agentbuilder.db import in_db
from agents.api.views import AGENT_ID, CALL_DEPTH, VERSION_ID
from agents.models import ApprovalRequest
from agents.protocols.process.encoder import ProcessEncoder, approval_request_data, whole_answer
from agents.protocols.process.errors import (
    ERROR_CODES,
    error_message,
    error_response,
    failure_status,
)
from agents.protocols.process.models import (
    AgentResponse,
    DataContent,
    Message,
    MessageType,
    Role,
    RunStatus,
    StreamObject,
    dump,
)
from agents.protocols.process.request import AgentRequest, approval_responses, runtime_messages
from agents.protocols.views import ProtocolView, Queued, queued, run_headers, streamed
from agents.runs.background import run_queue
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events
from agents.runtime.events import ResponseFailed
from agents.services.approvals import (
    StillWaiting,
    approvals_decide_by_id,
    run_resume_detached,
)

PROTOCOL = "process"


class ProcessAccepted(RootModel[Queued | AgentResponse]):
    """A 202: a background run queued, or a decision's response `in_progress`."""


class ProcessView(ProtocolView):
    protocol = PROTOCOL
    route = "/process"
    error_schema = AgentResponse  # a response with `status: failed` and its `error`
    conflicts = True  # an mcp_approval_response for a request decided already

    @extend_schema(
        operation_id="agents_process",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=AgentRequest,
        examples=[
            OpenApiExample(
                "question",
                value={
                    "input": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "text", "text": "What is 3 times 5?"}],
                        }
                    ],
                    "stream": False,
                },
                request_only=True,
            )
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                StreamObject,
                description="With `stream` (the default): one protocol object a `data:` "
                "event (the schema is each event's, its `data` the JSON of one object). "
                "With `stream: false`, one response object.",
            ),
            (200, "application/json"): AgentResponse,
            202: OpenApiResponse(
                ProcessAccepted,
                description="With `background: true`: the run is queued (`Location` is the "
                "run), or, for a decision, goes on in the server. A decision that leaves "
                "requests pending: a response `in_progress` whose output is what still waits.",
            ),
        },
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        body, invocation = await in_db(self._start)(agentId, versionId)
        if isinstance(invocation, uuid.UUID):
            return queued(invocation)
        if isinstance(invocation, StillWaiting):
            return Response(await in_db(_still_waiting)(invocation, body.session_id), status=202)
        if body.background:  # only a decision gets here: a fresh background run is queued
            return _resumed_in_background(invocation, body.session_id)
        if body.stream:
            return _stream(invocation, body.session_id)
        return await _collect(invocation, body.session_id)

    def _start(
        self, agent_id: str, version_ref: str
    ) -> tuple[AgentRequest, Invocation | uuid.UUID | StillWaiting]:
        body = self.body(AgentRequest)
        if decisions := approval_responses(body):
            # Decisions on calls a run waits on: that run goes on (docs/api.md#process).
            decided = approvals_decide_by_id(
                user=self.request.user, environment=self.environment, decisions=decisions
            )
            return body, decided
        messages = runtime_messages(body)
        request = self.run_request(
            agent_id,
            version_ref,
            messages=messages,
            thread_id=body.session_id or "",
            webhook=body.webhook,
            stream=body.stream,
        )
        if body.background:
            return body, run_queue(request)
        return body, invocation_start(request)

    def handle_exception(self, exc: Exception) -> Response:
        """Every refusal in the protocol's style; status and headers (X-Run-Id,
        WWW-Authenticate, Retry-After) as the platform's handler set them."""
        response = super().handle_exception(exc)
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        code = ERROR_CODES.get(response.status_code, "error")
        response.data = error_response(code, error_message(detail))
        return response


async def _collect(invocation: Invocation, session_id: str | None) -> Response:
    encoder = ProcessEncoder(session_id)
    events = await collected_events(invocation)
    for event in whole_answer(events):
        encoder.encode(event)
    last = events[-1]
    status = failure_status(last.code) if isinstance(last, ResponseFailed) else 200
    return Response(encoder.body(), status=status, headers=run_headers(invocation))


def _resumed_in_background(invocation: Invocation, session_id: str | None) -> Response:
    """A decision with `background`: its maker does not wait, the resumed run goes on in
    this server (claimed by it already); 202, a response `in_progress`, `Location` the run."""
    run_resume_detached(invocation)
    response = AgentResponse(
        id=invocation.response_id, session_id=session_id, status=RunStatus.InProgress
    )
    location = reverse("run-detail", kwargs={"runId": str(invocation.run_id)})
    headers = {**run_headers(invocation), "Location": location}
    return Response(dump(response), status=202, headers=headers)


def _still_waiting(waiting: StillWaiting, session_id: str | None) -> dict[str, Any]:
    """Decided in part: a response `in_progress` whose output is what still waits."""
    pending = ApprovalRequest.objects.filter(pk__in=waiting.pending).order_by("created_at")
    output = [
        Message(
            id=str(a.pk),
            type=MessageType.MCP_APPROVAL_REQUEST,
            role=Role.ASSISTANT,
            status=RunStatus.Completed,
            content=[
                DataContent(data=approval_request_data(str(a.pk), a.tool, a.arguments, a.call_id))
            ],
        )
        for a in pending
    ]
    response = AgentResponse(session_id=session_id, status=RunStatus.InProgress, output=output)
    return dump(response)


def _stream(invocation: Invocation, session_id: str | None) -> StreamingHttpResponse:
    encoder = ProcessEncoder(session_id)
    return streamed(invocation, encoder.frames, "text/event-stream; charset=utf-8")
