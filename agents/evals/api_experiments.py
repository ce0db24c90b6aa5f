"""Experiments' routes (docs/api.md#experiments): /v1/experiments, their results, cancel
and compare, and an alias's gate (docs/api.md#gated-aliases).

An experiment needs INVOKE on the agent (its runs are the requester's) and READ of the
dataset; READ on the agent shows it. A gate is set by EDIT on the agent.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, StrictInt
from rest_framework.response import Response

from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.errors import Conflict, Invalid, NotFound
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.permissions import Action
from agents.api.aliases import ALIAS_NAME
from agents.api.views import AGENT_ID, PAGE, AgentScopedView
from agents.evals import gates, selectors
from agents.evals.compare import experiments_compare
from agents.evals.experiments import (
    ExperimentSpec,
    experiment_cancel,
    experiment_json,
    experiment_start,
)
from agents.models import AliasGate, Experiment
from agents.selectors.agents import agent_get

EXPERIMENT_ID = OpenApiParameter(
    "experimentId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Experiment uuid."
)


class ExperimentCreate(CamelModel):
    agent_id: uuid.UUID
    version: StrictInt | str = Field("latest", description="`latest`, a number or an alias.")
    dataset_id: uuid.UUID
    revision: int | None = Field(None, ge=1, description="Default: the dataset's current one.")
    scorers: list[Any] = Field(
        description='Names (`"exact"`) or objects with options (`{"name": "judge", "model": '
        '..., "rubric": ...}`): docs/api.md#scorers.'
    )
    repetitions: int = Field(1, ge=1, le=10, description="Runs of each case.")
    concurrency: int = Field(4, ge=1, le=32, description="Cases run at once.")


class ExperimentOut(OutputModel):
    """docs/api.md#experiments: `summary` is per scorer `{mean, passRate, cases}`."""

    id: uuid.UUID
    agent_id: uuid.UUID
    version: int
    dataset_id: uuid.UUID
    revision: int
    scorers: list[dict[str, Any]]
    repetitions: int
    concurrency: int
    status: str
    progress: dict[str, int]
    summary: dict[str, Any]
    pass_rate: float | None
    latency_ms: dict[str, float | None]
    tokens_usage: dict[str, int]
    judge_tokens_usage: dict[str, int] = Field(description="What judges spent scoring the runs.")
    cost_usd: float | None
    errors: int
    error: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    ended: bool

    @classmethod
    def of(cls, experiment: Experiment) -> ExperimentOut:
        return cls.model_validate(experiment_json(experiment))


class ExperimentList(OutputModel):
    experiments: list[ExperimentOut]
    pagination: Pagination


class ExperimentsQuery(PageQuery):
    agent_id: uuid.UUID | None = None


class ResultOut(OutputModel):
    case_id: uuid.UUID
    position: int
    repetition: int
    status: str
    run_id: uuid.UUID | None
    answer: str
    tool_calls: list[dict[str, Any]]
    scores: dict[str, Any] = Field(description="{scorer: {score, passed, reason}}")
    passed: bool | None
    latency_ms: int | None
    tokens_usage: dict[str, Any]
    cost_usd: float | None
    error: dict[str, Any] | None


class ResultList(OutputModel):
    results: list[ResultOut]
    pagination: Pagination


class CompareQuery(CamelModel):
    a: uuid.UUID
    b: uuid.UUID
    change: str | None = Field(
        None, description="Only rows of this change: regression, improvement, changed, same, …"
    )


class CompareOut(OutputModel):
    a: ExperimentOut
    b: ExperimentOut
    counts: dict[str, int]
    rows: list[dict[str, Any]]


class GateIn(CamelModel):
    dataset_id: uuid.UUID
    scorers: list[Any]
    thresholds: dict[str, Any] = Field(description="{<scorer>: minimum mean score, 0 to 1}")


class GateOut(OutputModel):
    name: str
    dataset_id: uuid.UUID
    scorers: list[dict[str, Any]]
    thresholds: dict[str, Any]
    updated_at: datetime

    @classmethod
    def of(cls, gate: AliasGate) -> GateOut:
        return cls(
            name=gate.name,
            dataset_id=gate.dataset_id,
            scorers=gate.scorers,
            thresholds=gate.thresholds,
            updated_at=gate.updated_at,
        )


# ---------------------------------------------------------------- experiments


def _result_out(result: Any) -> ResultOut:
    return ResultOut(
        case_id=result.case_id,
        position=result.position,
        repetition=result.repetition,
        status=result.status,
        run_id=result.run_id,
        answer=result.answer,
        tool_calls=result.tool_calls,
        scores=result.scores,
        passed=result.passed,
        latency_ms=result.latency_ms,
        tokens_usage=result.tokens_usage,
        cost_usd=None if result.cost_usd is None else float(result.cost_usd),
        error=result.error,
    )


class _ExperimentView(ApiView):
    def _experiment(self, experiment_id: str) -> Experiment:
        return selectors.experiment_for(
            self.request.user,
            path_uuid(experiment_id, "experimentId", "an experiment id"),
            self.environment,
        )


class ExperimentListView(_ExperimentView):
    @extend_schema(
        operation_id="experiments_list",
        parameters=[*PAGE, ENVIRONMENT],
        responses={200: ExperimentList},
        tags=["experiments"],
        summary="Experiments of the agents you can READ, newest first (`agentId` narrows)",
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(ExperimentsQuery)
        experiments = selectors.experiments_visible(request.user).filter(
            agent__environment=self.environment
        )
        if query.agent_id is not None:
            experiments = experiments.filter(agent_id=query.agent_id)
        items, pagination = paginate(experiments, query)
        return render(
            ExperimentList(experiments=[ExperimentOut.of(e) for e in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="experiments_create",
        parameters=[ENVIRONMENT],
        request=ExperimentCreate,
        responses={202: ExperimentOut},
        tags=["experiments"],
        summary="Run a version on every case of a dataset's revision, and score the runs",
        description="Needs INVOKE on the agent (the runs are yours, protocol `eval`) and READ "
        "of the dataset. 202 with the experiment `queued`; follow it with GET "
        "/v1/experiments/{id} (`progress`). Errors at their field: an unknown scorer or bad "
        'options at `["body", "scorers", i, ...]`, a task case whose inputs the version '
        'refuses at `["dataset", "cases", position, "input", "inputs", ...]`.',
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(ExperimentCreate)
        agent = agent_get(
            user=request.user,
            environment=self.environment,
            agent_id=body.agent_id,
            action=Action.INVOKE,
        )
        try:
            dataset = selectors.dataset_for(
                request.user, body.dataset_id, Action.READ, self.environment
            )
        except NotFound as exc:
            raise Invalid.at(("body", "datasetId"), exc.detail) from None
        spec = ExperimentSpec(
            version=str(body.version),
            scorers=body.scorers,
            revision=body.revision,
            repetitions=body.repetitions,
            concurrency=body.concurrency,
        )
        # As created: its slots may have taken it since, which GET shows.
        experiment = experiment_start(user=request.user, agent=agent, dataset=dataset, spec=spec)
        response = render(ExperimentOut.of(experiment), status=202)
        response["Location"] = f"/v1/experiments/{experiment.pk}"
        return response


class ExperimentDetailView(_ExperimentView):
    @extend_schema(
        operation_id="experiments_get",
        parameters=[EXPERIMENT_ID, ENVIRONMENT],
        responses={200: ExperimentOut},
        tags=["experiments"],
    )
    def get(self, request: ApiRequest, experimentId: str) -> Response:
        return render(ExperimentOut.of(self._experiment(experimentId)))


class ExperimentCancelView(_ExperimentView):
    conflicts = True  # an experiment that has ended

    @extend_schema(
        operation_id="experiments_cancel",
        parameters=[EXPERIMENT_ID, ENVIRONMENT],
        request=None,
        responses={202: ExperimentOut},
        tags=["experiments"],
        summary="Stop an experiment: cases not run are not, runs under way are canceled",
        description="Its requester, or INVOKE holders of its agent. 409 once it has ended.",
    )
    def post(self, request: ApiRequest, experimentId: str) -> Response:
        experiment = self._experiment(experimentId)
        agent_get(
            user=request.user,
            environment=self.environment,
            agent_id=experiment.agent_id,
            action=Action.INVOKE,
        )
        if not experiment_cancel(user=request.user, experiment=experiment):
            raise Conflict(f"Experiment '{experiment.pk}' has ended ({experiment.status}).")
        return render(ExperimentOut.of(self._experiment(experimentId)), status=202)


class ExperimentResultsView(_ExperimentView):
    @extend_schema(
        operation_id="experiments_results",
        parameters=[EXPERIMENT_ID, *PAGE, ENVIRONMENT],
        responses={200: ResultList},
        tags=["experiments"],
        summary="Each case's run, answer and scores, in the dataset's order",
    )
    def get(self, request: ApiRequest, experimentId: str) -> Response:
        experiment = self._experiment(experimentId)
        items, pagination = paginate(
            selectors.experiment_results(experiment), self.query(PageQuery)
        )
        return render(ResultList(results=[_result_out(r) for r in items], pagination=pagination))


class ExperimentCompareView(_ExperimentView):
    @extend_schema(
        operation_id="experiments_compare",
        parameters=[
            OpenApiParameter("a", OpenApiTypes.UUID, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("b", OpenApiTypes.UUID, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("change", str, OpenApiParameter.QUERY, required=False),
            ENVIRONMENT,
        ],
        responses={200: CompareOut},
        tags=["experiments"],
        summary="Two experiments case by case, regressions first",
        description="Rows `{caseId, position, input, expected, a, b, change}`; `change` is "
        "`regression` (B's pass rate below A's), `improvement`, `changed` (answers, tool "
        "calls or scores differ), `same`, or `only_a` / `only_b` for a case of one side.",
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(CompareQuery)
        a = self._experiment(str(query.a))
        b = self._experiment(str(query.b))
        comparison = experiments_compare(a, b)
        rows = [r.as_json() for r in comparison.rows if query.change in (None, r.change)]
        return render(
            CompareOut(
                a=ExperimentOut.of(a), b=ExperimentOut.of(b), counts=comparison.counts, rows=rows
            )
        )


# ---------------------------------------------------------------- gates


class AliasGateView(AgentScopedView):
    @extend_schema(
        operation_id="aliases_gate_get",
        parameters=[AGENT_ID, ALIAS_NAME, ENVIRONMENT],
        responses={200: GateOut},
        tags=["aliases"],
    )
    def get(self, request: ApiRequest, agentId: str, name: str) -> Response:
        gate = gates.gate_for(self._agent(agentId), name)
        if gate is None:
            raise NotFound(f"Alias '{name}' has no gate.")
        return render(GateOut.of(gate))

    @extend_schema(
        operation_id="aliases_gate_set",
        parameters=[AGENT_ID, ALIAS_NAME, ENVIRONMENT],
        request=GateIn,
        responses={200: GateOut},
        tags=["aliases"],
        summary="Gate an alias: it moves only to a version that passes the dataset",
        description="Needs EDIT on the agent and READ of the dataset. `thresholds` name the "
        "gate's scorers, each with the minimum mean score (0 to 1) a version's experiment "
        "must reach (docs/api.md#gated-aliases).",
    )
    def put(self, request: ApiRequest, agentId: str, name: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(GateIn)
        try:
            dataset = selectors.dataset_for(
                request.user, body.dataset_id, Action.READ, self.environment
            )
        except NotFound as exc:
            raise Invalid.at(("body", "datasetId"), exc.detail) from None
        gate = gates.gate_set(
            user=request.user,
            agent=agent,
            name=name,
            dataset=dataset,
            scorers=body.scorers,
            thresholds=body.thresholds,
        )
        return render(GateOut.of(gate))

    @extend_schema(
        operation_id="aliases_gate_delete",
        parameters=[AGENT_ID, ALIAS_NAME, ENVIRONMENT],
        responses={204: None},
        tags=["aliases"],
    )
    def delete(self, request: ApiRequest, agentId: str, name: str) -> Response:
        gates.gate_delete(user=request.user, agent=self._agent(agentId, Action.EDIT), name=name)
        return Response(status=204)
