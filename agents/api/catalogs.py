"""The catalogs a caller picks from (docs/api.md#catalogs): environments, agent types, models."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from agentbuilder.api.errors import ErrorBody
from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery, page_of, paginate
from agentbuilder.api.views import ApiRequest, ApiView, render
from agents.access.environments import environment_create, environment_list
from agents.api import schemas as s
from agents.api.views import PAGE
from agents.models import AgentType
from agents.selectors.catalog import model_list
from agents.services.catalog import model_prices_update

AGENT_TYPE_DESCRIPTIONS = {
    AgentType.TOOL: "Calls function tools, other agents and MCP servers in a loop; can "
    "answer with structured output.",
    AgentType.RAG: "Answers questions from the environment's documents and cites its sources.",
    AgentType.TASK: "Fills a templated prompt from JSON-Schema-validated inputs; optional "
    "output schema.",
}


class EnvironmentListView(ApiView):
    conflicts = True  # a taken name

    @extend_schema(
        operation_id="environments_list",
        parameters=PAGE,
        responses={200: s.EnvironmentList},
        tags=["environments"],
    )
    def get(self, request: ApiRequest) -> Response:
        items, pagination = paginate(environment_list(user=request.user), self.query(PageQuery))
        return render(
            s.EnvironmentList(
                environments=[s.EnvironmentOut.of(e) for e in items], pagination=pagination
            )
        )

    @extend_schema(
        operation_id="environments_create",
        request=s.EnvironmentCreate,
        responses={
            201: s.EnvironmentOut,
            403: OpenApiResponse(
                ErrorBody, description="The caller lacks `agents.add_environment`."
            ),
        },
        tags=["environments"],
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(s.EnvironmentCreate)
        env = environment_create(user=request.user, name=body.name, description=body.description)
        return render(s.EnvironmentOut.of(env), status=201)


class AgentTypeListView(ApiView):
    @extend_schema(
        operation_id="agent_types_list",
        parameters=PAGE,
        responses={200: s.AgentTypeList},
        tags=["agents"],
    )
    def get(self, request: ApiRequest) -> Response:
        types = [
            s.AgentTypeOut(type=t.value, description=d) for t, d in AGENT_TYPE_DESCRIPTIONS.items()
        ]
        items, pagination = page_of(types, self.query(PageQuery))
        return render(s.AgentTypeList(agent_types=items, pagination=pagination))


class ModelListView(ApiView):
    @extend_schema(
        operation_id="models_list",
        parameters=query_parameters(s.ModelListQuery),
        responses={200: s.ModelList},
        tags=["catalog"],
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(s.ModelListQuery)
        items, pagination = paginate(model_list(agent_type=query.agent_type), query)
        return render(s.ModelList(models=[s.ModelOut.of(m) for m in items], pagination=pagination))


class ModelDetailView(ApiView):
    @extend_schema(
        operation_id="models_prices_update",
        request=s.ModelPricesPatch,
        responses={200: s.ModelOut},
        tags=["catalog"],
    )
    def patch(self, request: ApiRequest, modelId: str) -> Response:
        body = self.body(s.ModelPricesPatch)
        changes = {
            "input_usd_per_mtok": body.input_price_per_m_tok,
            "output_usd_per_mtok": body.output_price_per_m_tok,
            "cached_input_usd_per_mtok": body.cached_input_price_per_m_tok,
            "prices_as_of": body.prices_as_of,
        }
        sent = {WIRE_NAMES[k] for k in body.model_fields_set}
        model = model_prices_update(
            user=request.user,
            model_id=modelId,
            changes={k: v for k, v in changes.items() if k in sent},
        )
        return render(s.ModelOut.of(model))


# The patch's fields by the service's names: a field the body left out stays as it is.
WIRE_NAMES = {
    "input_price_per_m_tok": "input_usd_per_mtok",
    "output_price_per_m_tok": "output_usd_per_mtok",
    "cached_input_price_per_m_tok": "cached_input_usd_per_mtok",
    "prices_as_of": "prices_as_of",
}
