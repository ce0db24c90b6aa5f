"""The saves of the admin's case table (agents/static/agents/dataset_cases.js): a row
added, a row replaced, rows removed, each one new revision through the dataset services.
Session and CSRF like every admin form, staff only, EDIT on the dataset's environment.

A refused row answers 400 with each problem at `("row", <field>)` (the table's column; the
path inside it leads the message), so the page shows it in its cell; nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from drf_spectacular.utils import extend_schema
from pydantic import Field
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ApiView
from agentbuilder.errors import ErrorItem, Invalid
from agentbuilder.wire import CamelModel
from agents.access.permissions import Action
from agents.evals.cases import MAX_CASES_PER_CALL
from agents.evals.selectors import dataset_cases, dataset_for
from agents.evals.services import case_replace, cases_add, cases_remove
from agents.evals.table import case_of, row_field, row_of
from agents.models import Dataset, DatasetCase

NO_CASE = "00000000-0000-0000-0000-000000000000"  # replaced by the page with a case's id


class RowBody(CamelModel):
    row: dict[str, str | None]


class RemoveBody(CamelModel):
    ids: list[uuid.UUID] = Field(min_length=1, max_length=MAX_CASES_PER_CALL)


class TableView(ApiView):
    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]

    def dataset(self, object_id: str) -> Dataset:
        dataset_id = path_uuid(object_id, "object_id", "a dataset id")
        return dataset_for(self.request.user, dataset_id, Action.EDIT)

    def case(self, dataset: Dataset) -> dict[str, Any]:
        return case_of(self.body(RowBody).row, agent_type=dataset.agent_type)

    def answer(self, dataset: Dataset, case: DatasetCase | None) -> Response:
        body: dict[str, Any] = {
            "revision": dataset.revision,
            "count": dataset_cases(dataset).count(),
        }
        if case is not None:
            stored = {"input": case.input, "expected": case.expected, "metadata": case.metadata}
            body["case"] = {"id": str(case.pk), "position": case.position, "row": row_of(stored)}
        return Response(body)


class CaseAddView(TableView):
    """POST {"row": {field: text}}: the row as a new case, last."""

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str) -> Response:
        dataset = self.dataset(object_id)
        with at_cells():
            case = self.case(dataset)
            revision = cases_add(
                user=self.request.user, dataset=dataset, cases=[case], loc=("row",)
            )
        added = DatasetCase.objects.get(dataset=dataset, added_in=revision)
        return self.answer(dataset, added)


class CaseReplaceView(TableView):
    """POST {"row": {field: text}}: the row replaces case `case_id` of the current revision
    (404 when another save removed or replaced it since the page showed it)."""

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str, case_id: str) -> Response:
        dataset = self.dataset(object_id)
        case_uuid = path_uuid(case_id, "case_id", "a case id")
        with at_cells():
            case = self.case(dataset)
            new = case_replace(
                user=self.request.user, dataset=dataset, case_id=case_uuid, case=case, loc=("row",)
            )
        return self.answer(dataset, new)


class CasesRemoveView(TableView):
    """POST {"ids": [case id, …]}: those cases removed (all of them, or none)."""

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str) -> Response:
        dataset = self.dataset(object_id)
        ids = self.body(RemoveBody).ids
        cases_remove(user=self.request.user, dataset=dataset, case_ids=ids)
        return self.answer(dataset, None)


@contextmanager
def at_cells() -> Iterator[None]:
    """Re-raise a case's Invalid at the table's cells: ("row", field), the path inside the
    field leading the message; a problem of the whole row at ("row",)."""
    try:
        yield
    except Invalid as exc:
        raise Invalid([_at_cell(item) for item in exc.errors]) from None


def _at_cell(item: ErrorItem) -> ErrorItem:
    field = row_field(item.loc)
    inside = _inside(item.loc, field)
    msg = f"{'.'.join(map(str, inside))}: {item.msg}" if inside else item.msg
    return ErrorItem(("row", field) if field else ("row",), msg, item.type)


def _inside(loc: tuple[str | int, ...], field: str | None) -> tuple[str | int, ...]:
    """The path below the cell's field (input.messages.0.content → messages.0.content)."""
    if field is None:
        return tuple(p for p in loc if p not in ("body", "row") and not isinstance(p, int))
    names = [str(p) for p in loc]
    if field in names:
        below = loc[names.index(field) + 1 :]
    else:  # "more": the expected key names itself
        below = loc[names.index("expected") + 1 :] if "expected" in names else ()
    return tuple(below)
