"""Datasets' routes (docs/api.md#datasets): /v1/datasets, their cases and revisions, a
promptfoo configuration imported, and a run's feedback.

Datasets are their environment's: READ, CREATE, EDIT and DELETE held on it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, StrictInt
from rest_framework.response import Response

from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.parsers import JSONLinesParser, JSONParser, NDJSONParser
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.permissions import Action, require_on_environment
from agents.api.views import PAGE
from agents.evals import selectors, services
from agents.evals.imports import promptfoo_dataset_import
from agents.models import AgentType, Dataset, DatasetCase
from agents.selectors.runs import run_get

DATASET_ID = OpenApiParameter(
    "datasetId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Dataset uuid."
)
CASE_ID = OpenApiParameter(
    "caseId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Case uuid."
)
RUN_ID = OpenApiParameter(
    "runId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Run uuid."
)
CASE_DOC = (
    '`{input: {messages} | {inputs} | "text", expected?: {output?, contains?, notContains?, '
    "regex?, outputSchema?, toolCalls?: [{name, arguments?}], toolCallsOrder?, "
    "sourceDocIds?}, metadata?}` (docs/api.md#datasets)."
)


class DatasetCreate(CamelModel):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$", description="Unique in the environment.")
    description: str = Field("", max_length=500)
    agent_type: AgentType = Field(description="The type of agent its cases are for.")


class DatasetPatch(CamelModel):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]{1,100}$")
    description: str | None = Field(None, max_length=500)


class DatasetOut(OutputModel):
    id: uuid.UUID
    name: str
    description: str
    agent_type: str
    revision: int = Field(description="Every change of its cases makes a new one.")
    environment_id: uuid.UUID
    created_at: datetime
    modified_at: datetime

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetOut:
        return cls(
            id=dataset.pk,
            name=dataset.name,
            description=dataset.description,
            agent_type=dataset.agent_type,
            revision=dataset.revision,
            environment_id=dataset.environment_id,
            created_at=dataset.created_at,
            modified_at=dataset.modified_at,
        )


class DatasetList(OutputModel):
    datasets: list[DatasetOut]
    pagination: Pagination


class CaseOut(OutputModel):
    id: uuid.UUID
    position: int
    input: dict[str, Any]
    expected: dict[str, Any] | None
    metadata: dict[str, Any] | None
    added_in: int = Field(description="The revision that added it.")
    source_run_id: uuid.UUID | None

    @classmethod
    def of(cls, case: DatasetCase) -> CaseOut:
        return cls(
            id=case.pk,
            position=case.position,
            input=case.input,
            expected=case.expected,
            metadata=case.metadata,
            added_in=case.added_in,
            source_run_id=case.source_run_id,
        )


class CaseList(OutputModel):
    revision: int
    cases: list[CaseOut]
    pagination: Pagination


class CasesQuery(PageQuery):
    revision: int | None = Field(None, ge=1, description="Default: the dataset's current one.")


class CasesAdded(OutputModel):
    revision: int
    added: int


class CaseFromRun(CamelModel):
    run_id: uuid.UUID
    expected_output: Any = Field(
        None, description="The case's expected output; default: the run's answer."
    )


class CasesRemove(CamelModel):
    case_ids: list[uuid.UUID] = Field(min_length=1, max_length=10_000)


class FeedbackIn(CamelModel):
    score: StrictInt = Field(
        description="1 (thumbs up) or -1 (thumbs down).", json_schema_extra={"enum": [1, -1]}
    )
    comment: str = Field("", max_length=4000)


class FeedbackOut(OutputModel):
    run_id: uuid.UUID
    score: int
    comment: str
    created_at: datetime


# ---------------------------------------------------------------- datasets


class _DatasetView(ApiView):
    conflicts = True  # a taken name; a dataset a gate uses

    def _dataset(self, dataset_id: str, action: Action = Action.READ) -> Dataset:
        return selectors.dataset_for(
            self.request.user,
            path_uuid(dataset_id, "datasetId", "a dataset id"),
            action,
            self.environment,
        )


class DatasetListView(_DatasetView):
    @extend_schema(
        operation_id="datasets_list",
        parameters=[*PAGE, ENVIRONMENT],
        responses={200: DatasetList},
        tags=["datasets"],
    )
    def get(self, request: ApiRequest) -> Response:
        datasets = selectors.datasets_visible(request.user, self.environment)
        items, pagination = paginate(datasets, self.query(PageQuery))
        return render(
            DatasetList(datasets=[DatasetOut.of(d) for d in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="datasets_create",
        parameters=[ENVIRONMENT],
        request=DatasetCreate,
        responses={201: DatasetOut},
        tags=["datasets"],
        summary="A dataset of cases for agents of one type (CREATE in the environment)",
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(DatasetCreate)
        require_on_environment(request.user, self.environment, Action.CREATE)
        dataset = services.dataset_create(
            user=request.user,
            environment=self.environment,
            name=body.name,
            agent_type=body.agent_type,
            description=body.description,
        )
        return render(DatasetOut.of(dataset), status=201)


class DatasetDetailView(_DatasetView):
    @extend_schema(
        operation_id="datasets_get",
        parameters=[DATASET_ID, ENVIRONMENT],
        responses={200: DatasetOut},
        tags=["datasets"],
    )
    def get(self, request: ApiRequest, datasetId: str) -> Response:
        return render(DatasetOut.of(self._dataset(datasetId)))

    @extend_schema(
        operation_id="datasets_update",
        parameters=[DATASET_ID, ENVIRONMENT],
        request=DatasetPatch,
        responses={200: DatasetOut},
        tags=["datasets"],
    )
    def patch(self, request: ApiRequest, datasetId: str) -> Response:
        dataset = self._dataset(datasetId, Action.EDIT)
        body = self.body(DatasetPatch)
        dataset = services.dataset_update(
            user=request.user, dataset=dataset, name=body.name, description=body.description
        )
        return render(DatasetOut.of(dataset))

    @extend_schema(
        operation_id="datasets_delete",
        parameters=[DATASET_ID, ENVIRONMENT],
        responses={204: None},
        tags=["datasets"],
        description="Deletes its cases and experiments too; 409 while an alias's gate uses it "
        "or one of its experiments allowed an alias's move.",
    )
    def delete(self, request: ApiRequest, datasetId: str) -> Response:
        services.dataset_delete(user=request.user, dataset=self._dataset(datasetId, Action.DELETE))
        return Response(status=204)


class PromptfooIn(CamelModel):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$", description="The dataset's name.")
    config: str = Field(
        min_length=1, max_length=4 * 1024 * 1024, description="promptfooconfig.yaml's text."
    )
    agent_type: AgentType | None = Field(None, description="A new dataset's agent type.")
    judge_model: str | None = Field(None, max_length=200)
    input_var: str | None = Field(None, max_length=100)


class PromptfooOut(OutputModel):
    dataset: DatasetOut
    created: bool
    revision: int
    added: int
    scorers: list[dict[str, Any]] = Field(description="What to run its experiments with.")
    warnings: list[dict[str, Any]] = Field(description="What did not carry over, and where.")


class PromptfooImportView(_DatasetView):
    conflicts = False

    @extend_schema(
        operation_id="datasets_import_promptfoo",
        parameters=[ENVIRONMENT],
        request=PromptfooIn,
        responses={201: PromptfooOut},
        tags=["datasets"],
        summary="A promptfoo configuration's tests into a dataset (made if new), as one revision",
        description="docs/api.md#importing-a-promptfoo-configuration. EDIT in the environment "
        "(and CREATE for a new dataset). All or nothing: a refused test is a 400 at its path "
        'under `["body", "config", ...]`; what does not carry over is listed in `warnings`.',
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(PromptfooIn)
        require_on_environment(request.user, self.environment, Action.EDIT)
        exists = selectors.datasets_visible(request.user, self.environment).filter(
            name__iexact=body.name
        )
        if not exists.exists():
            require_on_environment(request.user, self.environment, Action.CREATE)
        try:
            with transaction.atomic():  # a new dataset goes with its cases, or not at all
                done = promptfoo_dataset_import(
                    user=request.user,
                    environment=self.environment,
                    dataset_name=body.name,
                    config=body.config,
                    agent_type=body.agent_type,
                    judge_model=body.judge_model,
                    input_var=body.input_var,
                )
        except Invalid as exc:
            raise exc.prefixed("body") from None
        return render(
            PromptfooOut(
                dataset=DatasetOut.of(done.dataset),
                created=done.created,
                revision=done.revision,
                added=len(done.imported.cases),
                scorers=done.imported.scorers,
                warnings=[w.as_dict() for w in done.imported.warnings],
            ),
            status=201,
        )


class CaseListView(_DatasetView):
    conflicts = False
    # A dataset's cases come as a JSON array or as JSON Lines, as files hold them.
    parser_classes = [JSONParser, JSONLinesParser, NDJSONParser]

    @extend_schema(
        operation_id="dataset_cases_list",
        parameters=[DATASET_ID, *PAGE, ENVIRONMENT],
        responses={200: CaseList},
        tags=["datasets"],
        summary="A revision's cases, in order",
    )
    def get(self, request: ApiRequest, datasetId: str) -> Response:
        dataset = self._dataset(datasetId)
        query = self.query(CasesQuery)
        revision = dataset.revision if query.revision is None else query.revision
        items, pagination = paginate(selectors.dataset_cases(dataset, revision), query)
        return render(
            CaseList(revision=revision, cases=[CaseOut.of(c) for c in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="dataset_cases_add",
        parameters=[DATASET_ID, ENVIRONMENT],
        request={
            "application/json": {"type": "array", "items": {"type": "object"}},
            "application/jsonl": {"type": "string", "description": "One case a line."},
        },
        responses={201: CasesAdded},
        tags=["datasets"],
        summary="Add cases (at most 10,000 a call) as one new revision",
        description=f"A JSON array of cases, or JSON Lines. A case: {CASE_DOC} A bad case is a "
        '400 at its index (`["body", 3, "expected", "regex"]`) and none is added.',
    )
    def post(self, request: ApiRequest, datasetId: str) -> Response:
        dataset = self._dataset(datasetId, Action.EDIT)
        revision = services.cases_add(user=request.user, dataset=dataset, cases=request.data)
        added = dataset.cases.filter(added_in=revision).count()
        return render(CasesAdded(revision=revision, added=added), status=201)


class CaseRemoveView(_DatasetView):
    conflicts = False

    @extend_schema(
        operation_id="dataset_cases_remove",
        parameters=[DATASET_ID, ENVIRONMENT],
        request=CasesRemove,
        responses={200: CasesAdded},
        tags=["datasets"],
        summary="Remove cases, as one new revision (older revisions keep them)",
    )
    def post(self, request: ApiRequest, datasetId: str) -> Response:
        dataset = self._dataset(datasetId, Action.EDIT)
        body = self.body(CasesRemove)
        revision = services.cases_remove(user=request.user, dataset=dataset, case_ids=body.case_ids)
        return render(CasesAdded(revision=revision, added=0))


class CaseDetailView(_DatasetView):
    conflicts = False

    @extend_schema(
        operation_id="dataset_cases_replace",
        parameters=[DATASET_ID, CASE_ID, ENVIRONMENT],
        request={"application/json": {"type": "object"}},
        responses={200: CaseOut},
        tags=["datasets"],
        summary="Replace a case in its place, as one new revision",
    )
    def put(self, request: ApiRequest, datasetId: str, caseId: str) -> Response:
        dataset = self._dataset(datasetId, Action.EDIT)
        case = services.case_replace(
            user=request.user,
            dataset=dataset,
            case_id=path_uuid(caseId, "caseId", "a case id"),
            case=request.data,
        )
        return render(CaseOut.of(case))


class CaseFromRunView(_DatasetView):
    conflicts = False

    @extend_schema(
        operation_id="dataset_cases_from_run",
        parameters=[DATASET_ID, ENVIRONMENT],
        request=CaseFromRun,
        responses={201: CaseOut},
        tags=["datasets"],
        summary="Add a run as a case: its input, and its answer as the expected output",
    )
    def post(self, request: ApiRequest, datasetId: str) -> Response:
        dataset = self._dataset(datasetId, Action.EDIT)
        body = self.body(CaseFromRun)
        run = run_get(user=request.user, environment=self.environment, run_id=body.run_id)
        case = services.case_from_run(
            user=request.user, dataset=dataset, run=run, expected_output=body.expected_output
        )
        return render(CaseOut.of(case), status=201)


class RunFeedbackView(ApiView):
    @extend_schema(
        operation_id="runs_feedback",
        parameters=[RUN_ID, ENVIRONMENT],
        request=FeedbackIn,
        responses={200: FeedbackOut},
        tags=["runs"],
        summary="Thumbs up (1) or down (-1) on a run you can see, with a comment",
        description="One a person: giving it again replaces it.",
    )
    def post(self, request: ApiRequest, runId: str) -> Response:
        run_id = path_uuid(runId, "runId", "a run id")
        body = self.body(FeedbackIn)
        run = run_get(user=request.user, environment=self.environment, run_id=run_id)
        feedback = services.feedback_set(
            user=request.user, run=run, score=body.score, comment=body.comment
        )
        return render(
            FeedbackOut(
                run_id=run.pk,
                score=feedback.score,
                comment=feedback.comment,
                created_at=feedback.created_at,
            )
        )
