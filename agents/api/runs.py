"""Runs and threads (docs/api.md#runs): what each invocation did."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from agentbuilder.api.negotiation import JsonAnswers
from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import paginate
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, AsyncApiView, render
from agents.api import schemas as s
from agents.api.run_events import (
    NDJSON,
    SSE,
    EventsStart,
    Frames,
    event_frames,
    events_start,
    resume_after,
)
from agents.selectors.runs import run_check_visible, run_get, run_list, thread_runs
from agents.services.runs import run_cancel_request

RUN_ID = OpenApiParameter("runId", OpenApiTypes.UUID, OpenApiParameter.PATH)


class RunListView(ApiView):
    @extend_schema(
        operation_id="runs_list",
        parameters=[
            *query_parameters(s.RunListQuery),
            ENVIRONMENT,
        ],
        responses={200: s.RunList},
        tags=["runs"],
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(s.RunListQuery)
        runs = run_list(
            user=request.user,
            environment=self.environment,
            agent_id=query.agent_id,
            status=query.status,
            thread_id=query.thread_id,
            caller_id=query.caller_id,
            schedule_id=query.schedule_id,
        )
        items, pagination = paginate(runs, query)
        return render(s.RunList(runs=[s.RunOut.of(r) for r in items], pagination=pagination))


class RunDetailView(ApiView):
    @extend_schema(
        operation_id="runs_get",
        parameters=[
            RUN_ID,
            ENVIRONMENT,
        ],
        responses={200: s.RunOut},
        tags=["runs"],
    )
    def get(self, request: ApiRequest, runId: str) -> Response:
        run_id = path_uuid(runId, "runId", "a run id")
        run = run_get(user=request.user, environment=self.environment, run_id=run_id)
        return render(s.RunOut.of(run))


class RunCancelView(ApiView):
    conflicts = True  # a run that has ended

    @extend_schema(
        operation_id="runs_cancel",
        parameters=[RUN_ID, ENVIRONMENT],
        request=None,
        responses={202: s.RunOut},
        tags=["runs"],
        summary="Ask a run to end `canceled`, wherever it runs",
        description="The caller's own run, or any caller's with AUDIT. 202 with the run as it "
        "stands: it ends `canceled` within 2 s on whichever process runs it. 409 for a run "
        "that has ended, 404 for one the caller may not see.",
    )
    def post(self, request: ApiRequest, runId: str) -> Response:
        run_id = path_uuid(runId, "runId", "a run id")
        run = run_cancel_request(user=request.user, environment=self.environment, run_id=run_id)
        return render(s.RunOut.of(run), status=202)


LAST_EVENT_ID = OpenApiParameter(
    "Last-Event-ID",
    int,
    OpenApiParameter.HEADER,
    required=False,
    description="SSE: the index of the last event received; the stream resumes after it "
    "(instead of `after`).",
)
EVENT_LINES = (
    "The lines invoke-stream writes (docs/api.md#invoke-stream), each with its `index`; a "
    "run that ended without a terminal event ends with a `response.failed` line of its code "
    "(`canceled`, `interrupted`) and no index."
)


class RunEventsView(AsyncApiView):
    checks_in_first_hop = True
    # Its errors are JSON whatever the stream's Accept says.
    content_negotiation_class = JsonAnswers

    @extend_schema(
        operation_id="runs_events",
        parameters=[RUN_ID, *query_parameters(s.RunEventsQuery), LAST_EVENT_ID, ENVIRONMENT],
        responses={
            (200, NDJSON): OpenApiResponse(
                OpenApiTypes.STR, description=f"NDJSON, one event a line. {EVENT_LINES}"
            ),
            (200, SSE): OpenApiResponse(
                OpenApiTypes.STR,
                description="With `Accept: text/event-stream`: SSE, one event each, its `id:` "
                f"the index, the line as `data:`. {EVENT_LINES}",
            ),
        },
        tags=["runs"],
        summary="Replay a run's events from an index and follow it live to its end",
        description="Any run the caller may read (as GET /v1/runs/{runId}), streamed or "
        "not, queued or live, wherever it runs; its events are kept RUN_EVENTS_TTL.",
    )
    async def get(self, request: ApiRequest, runId: str) -> StreamingHttpResponse:
        start = await self.checked(self._start)(runId)
        sse = SSE in request.headers.get("Accept", "")
        response = StreamingHttpResponse(
            event_frames(start, Frames(sse)), content_type=SSE if sse else NDJSON
        )
        response["Cache-Control"], response["X-Accel-Buffering"] = "no-cache", "no"
        return response

    def _start(self, runId: str) -> EventsStart:
        run_id = path_uuid(runId, "runId", "a run id")
        after = resume_after(
            self.request.headers.get("Last-Event-ID"), self.query(s.RunEventsQuery).after
        )
        run_check_visible(user=self.request.user, environment=self.environment, run_id=run_id)
        return events_start(run_id, after)


class ThreadDetailView(ApiView):
    @extend_schema(
        operation_id="threads_get",
        parameters=[
            OpenApiParameter("threadId", str, OpenApiParameter.PATH),
            *query_parameters(s.ThreadQuery),
            ENVIRONMENT,
        ],
        responses={200: s.ThreadOut},
        tags=["runs"],
        summary="The messages of a thread, turn by turn",
    )
    def get(self, request: ApiRequest, threadId: str) -> Response:
        query = self.query(s.ThreadQuery)
        runs = thread_runs(
            user=request.user,
            environment=self.environment,
            thread_id=threadId,
            caller_id=query.caller_id,
        )
        return render(
            s.ThreadOut(
                thread_id=threadId,
                runs=[
                    s.ThreadRun(
                        id=r.pk, agent_id=r.agent_id, status=r.status, started_at=r.started_at
                    )
                    for r in runs
                ],
                messages=[m for r in runs for m in r.messages],
            )
        )
