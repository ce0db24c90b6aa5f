"""invoke, invoke-stream, invoke-task, invoke-task-stream (docs/api.md#invocation): the native
protocol (agents.protocols.native) over the one run path (agents.protocols.views).

Async from the request to the last byte: the database is read before the stream starts
and written after it ends, never while the model is talking.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from pydantic import RootModel
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.negotiation import JsonAnswers
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT
from agentbuilder.wire import CamelModel
from agents.api.run_events import NDJSON
from agents.api.runs import RUN_ID
from agents.api.views import AGENT_ID, CALL_DEPTH, VERSION_ID
from agents.protocols.native.encoder import (
    InvokeAnswer,
    InvokeResponse,
    NdjsonEncoder,
    response_body,
)
from agents.protocols.native.errors import error_body, failure_status
from agents.protocols.native.request import (
    ApprovalsBody,
    InvokeRequest,
    InvokeTaskRequest,
    runtime_messages,
)
from agents.protocols.views import QUEUED_DOC, ProtocolView, queued, run_headers, streamed
from agents.runs.background import run_queue
from agents.runs.request import CHAT_TYPES, TASK_TYPES
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events
from agents.runtime.events import ResponseFailed
from agents.services.approvals import StillWaiting, approvals_decide, run_resume_detached
from retrieval.rag import OVERRIDES as RAG_OVERRIDES


class _InvokeBase(ProtocolView):
    protocol = "native"
    route = "/invoke or /invoke-stream"
    agent_types: tuple[str, ...] = CHAT_TYPES
    stream = False
    checks_in_first_hop = True

    async def start(self, agent_id: str, version_id: str) -> Invocation | uuid.UUID:
        return await self.checked(self._start)(agent_id, version_id)

    def _start(self, agent_id: str, version_ref: str) -> Invocation | uuid.UUID:
        """The run opened, or queued (its id) for a `background` body."""
        body: InvokeRequest | InvokeTaskRequest
        if self.agent_types == TASK_TYPES:
            body = self.body(InvokeTaskRequest)
            request = self.run_request(
                agent_id,
                version_ref,
                agent_types=self.agent_types,
                inputs=body.inputs,
                guardrails=tuple(body.guardrails),
                webhook=body.webhook,
                stream=self.stream,
            )
        else:
            body = self.body(InvokeRequest)
            messages = runtime_messages(body)
            request = self.run_request(
                agent_id,
                version_ref,
                agent_types=self.agent_types,
                messages=messages,
                guardrails=tuple(body.guardrails),
                thread_id=body.thread_id or "",
                # Field names, not the wire's camelCase: retrieval.rag.OVERRIDES names them so.
                rag_overrides=body.model_dump(
                    include=set(RAG_OVERRIDES), exclude_none=True, by_alias=False
                ),
                webhook=body.webhook,
                stream=self.stream,
            )
        if body.background:
            return run_queue(request)
        return invocation_start(request)

    async def answer(self, agent_id: str, version_id: str) -> Any:
        invocation = await self.start(agent_id, version_id)
        if isinstance(invocation, uuid.UUID):
            return queued(invocation)
        if self.stream:
            encoder = NdjsonEncoder()
            return streamed(invocation, encoder.frames, "text/plain; charset=utf-8")
        return await _answered(invocation)


QUESTION = OpenApiExample(
    "question",
    value={"messages": [{"role": "user", "content": "What is 3 times 5?"}]},
    request_only=True,
)
TASK_INPUTS = OpenApiExample(
    "inputs",
    summary="The task agent's inputSchema decides the inputs",
    value={"inputs": {"text": "The warranty covers parts for two years.", "audience": "buyers"}},
    request_only=True,
)
STREAM_DOC = {
    (200, "text/plain"): OpenApiResponse(
        OpenApiTypes.STR,
        description="NDJSON: one event a line (`response.created` ... `response.completed` "
        "or `response.failed`), `text/plain; charset=utf-8`.",
    )
}


class InvokeView(_InvokeBase):
    @extend_schema(
        operation_id="agents_invoke",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=InvokeRequest,
        examples=[QUESTION],
        responses={200: InvokeAnswer, **QUEUED_DOC},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeStreamView(_InvokeBase):
    stream = True

    @extend_schema(
        operation_id="agents_invoke_stream",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=InvokeRequest,
        examples=[QUESTION],
        responses={**STREAM_DOC, **QUEUED_DOC},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeTaskView(_InvokeBase):
    route = "/invoke-task or /invoke-task-stream"
    agent_types = TASK_TYPES

    @extend_schema(
        operation_id="agents_invoke_task",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=InvokeTaskRequest,
        examples=[TASK_INPUTS],
        responses={200: InvokeResponse, **QUEUED_DOC},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeTaskStreamView(InvokeTaskView):
    stream = True

    @extend_schema(
        operation_id="agents_invoke_task_stream",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=InvokeTaskRequest,
        examples=[TASK_INPUTS],
        responses={**STREAM_DOC, **QUEUED_DOC},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class StillWaitingOut(CamelModel):
    run_id: uuid.UUID
    status: Literal["awaiting_approval"] = "awaiting_approval"
    pending_approval_requests: list[uuid.UUID]


class Resumed(CamelModel):
    run_id: uuid.UUID
    status: Literal["in_progress"] = "in_progress"


class DecisionAccepted(RootModel[StillWaitingOut | Resumed]):
    """The 202 of a decision: the run waits for the rest, or goes on in the server."""


class RunApprovalsView(ProtocolView):
    """POST /v1/runs/{runId}/approvals (docs/api.md#tool-approvals)."""

    protocol = "native"
    checks_in_first_hop = True
    conflicts = True  # decided already, or the run waits no more
    # Its errors are JSON whatever Accept says; NDJSON is asked with Accept.
    content_negotiation_class = JsonAnswers
    background = False  # the body's: the resumed run goes on in the server

    @extend_schema(
        operation_id="runs_approvals",
        parameters=[RUN_ID, ENVIRONMENT],
        request=ApprovalsBody,
        responses={
            200: InvokeAnswer,
            **STREAM_DOC,
            202: OpenApiResponse(
                DecisionAccepted,
                description="Decided in part: the run waits for the rest. Or, with "
                "`background`, resumed: it goes on in the server.",
            ),
        },
        tags=["runs"],
        summary="Decide the tool calls a run waits on; the last decision resumes it",
        description="By the run's caller or a holder of APPROVE on its agent (404 for whoever "
        "may not see the run, 403 for one who only reads it). Each request is decided once "
        "(409 after, and for a run that waits no more: expired, canceled). When none is left "
        "pending the same run goes on where it stopped, answering as invoke does: JSON, or "
        "NDJSON with `Accept: application/x-ndjson`. Approved calls run; rejected ones give "
        "the model a result that says so, with the message.",
    )
    async def post(self, request: Request, runId: str) -> Any:
        decided = await self.checked(self._decide)(runId)
        if isinstance(decided, StillWaiting):
            waiting = StillWaitingOut(
                run_id=decided.run_id, pending_approval_requests=list(decided.pending)
            )
            return Response(waiting.model_dump(mode="json", by_alias=True), status=202)
        if self.background:
            run_resume_detached(decided)
            resumed = Resumed(run_id=decided.run_id).model_dump(mode="json", by_alias=True)
            return Response(resumed, status=202, headers={"X-Run-Id": str(decided.run_id)})
        if NDJSON in request.headers.get("Accept", ""):
            return streamed(decided, NdjsonEncoder().frames, NDJSON)
        return await _answered(decided)

    def _decide(self, runId: str) -> Invocation | StillWaiting:
        run_id = path_uuid(runId, "runId", "a run id")
        body = self.body(ApprovalsBody)
        self.background = body.background
        return approvals_decide(
            user=self.request.user,
            environment=self.environment,
            run_id=run_id,
            decisions=body.decided(),
        )


async def _answered(invocation: Invocation) -> Response:
    """invoke's answer: the run to its end, as a response object (or a failure's error)."""
    events = await collected_events(invocation)
    headers = run_headers(invocation)
    last = events[-1]
    if isinstance(last, ResponseFailed):
        return Response(error_body(last), status=failure_status(last.code), headers=headers)
    return Response(response_body(events), headers=headers)
