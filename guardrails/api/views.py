from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.views import ApiView, render
from agentbuilder.wire import OutputModel
from guardrails.selectors import guardrail_list


class GuardrailOut(OutputModel):
    name: str
    description: str


class GuardrailList(OutputModel):
    guardrails: list[GuardrailOut]
    pagination: Pagination


class GuardrailListView(ApiView):
    @extend_schema(
        operation_id="guardrails_list",
        parameters=[
            *query_parameters(PageQuery),
            OpenApiParameter("X-Environment", str, OpenApiParameter.HEADER, required=False),
        ],
        responses={200: GuardrailList},
        tags=["catalog"],
        summary="Guardrails usable in the caller's environment",
    )
    def get(self, request: Request) -> Response:
        rows = guardrail_list(environment_id=self.environment.pk)
        items, pagination = paginate(rows, self.query(PageQuery))
        return render(
            GuardrailList(
                guardrails=[GuardrailOut(name=g.name, description=g.description) for g in items],
                pagination=pagination,
            )
        )
