"""Agents (docs/api.md#agents-and-versions): list, create, get, change, delete, look up by name."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import paginate
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agents.access.permissions import Action
from agents.api import schemas as s
from agents.api.views import AGENT_ID, AgentScopedView
from agents.selectors.agents import agent_get_by_name, agent_list
from agents.selectors.versions import version_get_by_label
from agents.services.agents import agent_create, agent_delete, agent_update


class AgentListView(ApiView):
    conflicts = True  # a taken name

    @extend_schema(
        operation_id="agents_list",
        parameters=[
            *query_parameters(s.AgentListQuery, name="Case-insensitive substring."),
            ENVIRONMENT,
        ],
        responses={200: s.AgentList},
        tags=["agents"],
    )
    def get(self, request: ApiRequest) -> Response:
        query = self.query(s.AgentListQuery)
        agents = agent_list(
            user=request.user,
            environment=self.environment,
            agent_type=query.agent_type,
            name=query.name,
        )
        items, pagination = paginate(agents, query)
        return render(s.AgentList(agents=[s.AgentOut.of(a) for a in items], pagination=pagination))

    @extend_schema(
        operation_id="agents_create",
        request=s.AgentCreate,
        examples=[
            OpenApiExample(
                "calculator",
                value={
                    "name": "calculator",
                    "description": "Multiplies numbers",
                    "agentType": "tool",
                    "config": {
                        "llmModelId": "local.demo-v1",
                        "systemPrompt": "You are a helpful assistant.",
                        "tools": [
                            {
                                "toolType": "function",
                                "name": "multiply",
                                "description": "Multiplies two numbers",
                                "funcName": "multiply",
                            }
                        ],
                    },
                },
                request_only=True,
            )
        ],
        responses={201: s.AgentOut},
        parameters=[ENVIRONMENT],
        tags=["agents"],
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(s.AgentCreate)
        agent, version = agent_create(
            user=request.user,
            environment=self.environment,
            name=body.name,
            display_name=body.display_name,
            description=body.description,
            agent_type=body.agent_type,
            version_label=body.version_label,
            notes=body.notes,
            config=body.config,
        )
        # The creator may hold CREATE without READ: answer from the rows just written.
        return render(s.AgentOut.of(agent, current_version_id=version.pk), status=201)


class AgentDetailView(AgentScopedView):
    conflicts = True  # renamed to a taken name

    @extend_schema(
        operation_id="agents_get",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: s.AgentOut},
        tags=["agents"],
    )
    def get(self, request: ApiRequest, agentId: str) -> Response:
        return render(s.AgentOut.of(self._agent(agentId)))

    @extend_schema(
        operation_id="agents_update",
        parameters=[AGENT_ID, ENVIRONMENT],
        request=s.AgentPatch,
        responses={200: s.AgentOut},
        tags=["agents"],
    )
    def patch(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(s.AgentPatch)
        changes = body.model_dump(exclude_none=True, by_alias=False)
        agent_update(user=request.user, agent=agent, changes=changes)
        return render(s.AgentOut.of(self._agent(agentId)))

    @extend_schema(
        operation_id="agents_delete",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: s.DeletedAgent},
        tags=["agents"],
    )
    def delete(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId, Action.DELETE)
        agent_delete(user=request.user, agent=agent)
        return render(s.DeletedAgent(agent_id=agent.pk))


class AgentLookupView(ApiView):
    @extend_schema(
        operation_id="agents_lookup",
        request=s.AgentLookup,
        responses={200: s.AgentWithVersion},
        parameters=[ENVIRONMENT],
        tags=["agents"],
        summary="Find an agent by name (and version label) in the environment",
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(s.AgentLookup)
        agent = agent_get_by_name(user=request.user, environment=self.environment, name=body.name)
        version = version_get_by_label(agent=agent, label=body.version_label)
        return render(
            s.AgentWithVersion(agent=s.AgentOut.of(agent), version=s.VersionOut.of(version))
        )
