"""Runs and threads (docs/api.md#runs): what each invocation did."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import paginate
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agents.api import schemas as s
from agents.selectors.runs import run_get, run_list, thread_runs
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
