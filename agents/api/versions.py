"""Versions of an agent (docs/api.md#agents-and-versions): list, add, get, the latest of many."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from agentbuilder.api.pagination import PageQuery, paginate
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agents.access.permissions import Action
from agents.api import schemas as s
from agents.api.views import AGENT_ID, PAGE, VERSION_ID, AgentScopedView
from agents.selectors.agents import agents_by_ids
from agents.selectors.versions import latest_versions, version_get, version_list
from agents.services.versions import version_add


class VersionListView(AgentScopedView):
    conflicts = True  # a taken version label

    @extend_schema(
        operation_id="versions_list",
        parameters=[AGENT_ID, ENVIRONMENT, *PAGE],
        responses={200: s.VersionList},
        tags=["versions"],
    )
    def get(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId)
        items, pagination = paginate(version_list(agent=agent), self.query(PageQuery))
        return render(
            s.VersionList(
                agent=s.AgentOut.of(agent),
                versions=[s.VersionSummary.of(v) for v in items],
                pagination=pagination,
            )
        )

    @extend_schema(
        operation_id="versions_create",
        parameters=[AGENT_ID, ENVIRONMENT],
        request=s.VersionCreate,
        responses={201: s.AgentWithVersion},
        tags=["versions"],
    )
    def post(self, request: ApiRequest, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(s.VersionCreate)
        version = version_add(
            user=request.user,
            agent=agent,
            config=body.config,
            version_label=body.version_label,
            notes=body.notes,
        )
        agent = self._agent(agentId)
        return render(
            s.AgentWithVersion(agent=s.AgentOut.of(agent), version=s.VersionOut.of(version)), 201
        )


class VersionDetailView(AgentScopedView):
    @extend_schema(
        operation_id="versions_get",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        responses={200: s.AgentWithVersion},
        tags=["versions"],
    )
    def get(self, request: ApiRequest, agentId: str, versionId: str) -> Response:
        agent = self._agent(agentId)
        version = version_get(agent=agent, ref=versionId)
        return render(
            s.AgentWithVersion(agent=s.AgentOut.of(agent), version=s.VersionOut.of(version))
        )


class BatchGetView(ApiView):
    @extend_schema(
        operation_id="versions_batch_get",
        request=s.BatchGet,
        responses={200: s.BatchGetOut},
        parameters=[ENVIRONMENT],
        tags=["versions"],
        summary="The latest version of up to 100 agents",
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(s.BatchGet)
        ids: dict[str, uuid.UUID | None] = {}
        for raw in body.agent_ids:
            try:
                ids[raw] = uuid.UUID(raw)
            except ValueError:
                ids[raw] = None
        valid = [i for i in ids.values() if i is not None]
        agents = agents_by_ids(user=request.user, environment=self.environment, agent_ids=valid)
        versions = latest_versions(agent_ids=list(agents))
        found, errors = [], []
        for raw, parsed in ids.items():
            if parsed is None:
                errors.append(
                    s.BatchError(agent_id=raw, status=400, message="not a valid agent id")
                )
            elif parsed in agents and parsed in versions:
                found.append(
                    s.AgentWithVersion(
                        agent=s.AgentOut.of(agents[parsed]),
                        version=s.VersionOut.of(versions[parsed]),
                    )
                )
            else:
                errors.append(s.BatchError(agent_id=raw, status=404, message="Agent not found."))
        return render(s.BatchGetOut(agents=found, errors=errors))
