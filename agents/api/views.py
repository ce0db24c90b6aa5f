"""Agents, versions, catalogs and tokens (SPEC sections 1 and 3).

Each view validates its input, calls one service or selector and renders the answer;
permission checks and domain rules live below it.
"""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery, page_of, paginate
from agentbuilder.api.parsers import FormParser, JSONParser
from agentbuilder.api.views import ApiView, render
from agentbuilder.errors import Invalid
from agents import selectors, services
from agents.api import schemas as s
from agents.api.throttling import ScopedRateThrottle, credential_attempt
from agents.models import Agent, AgentType
from agents.permissions import Action

AGENT_ID = OpenApiParameter("agentId", str, OpenApiParameter.PATH, description="Agent uuid.")
VERSION_ID = OpenApiParameter(
    "versionId", str, OpenApiParameter.PATH, description="`latest`, a version number or uuid."
)
ENVIRONMENT = OpenApiParameter(
    "X-Environment",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Environment name or id; ignored when the token names one. Default: `default`.",
)
PAGE = query_parameters(PageQuery)

AGENT_TYPE_DESCRIPTIONS = {
    AgentType.TOOL: "Calls function tools, other agents and MCP servers in a loop; can "
    "answer with structured output.",
    AgentType.RAG: "Answers questions from the environment's documents and cites its sources.",
    AgentType.TASK: "Fills a templated prompt from JSON-Schema-validated inputs; optional "
    "output schema.",
}


def agent_uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise Invalid.at(("path", "agentId"), "must be an agent id (a uuid)") from None


class TokenView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, FormParser]
    throttle_classes = [ScopedRateThrottle]  # per address; credential_attempt: per account
    throttle_scope = "token"

    @extend_schema(
        operation_id="auth_token",
        request={
            "application/json": s.TokenRequest,
            "application/x-www-form-urlencoded": s.TokenRequest,
        },
        responses={200: s.TokenOut},
        auth=[],
        tags=["auth"],
        summary="Get an access token (client credentials or password grant)",
    )
    def post(self, request: Request) -> Response:
        body = self.body(s.TokenRequest)
        if body.grant_type == "client_credentials":
            client_id = _required(body.client_id, "client_id")
            client_secret = _required(body.client_secret, "client_secret")
            with credential_attempt(f"client:{client_id}"):
                issued = services.token_for_client(client_id=client_id, client_secret=client_secret)
        else:
            username = _required(body.username, "username")
            password = _required(body.password, "password")
            with credential_attempt(f"user:{username}"):
                issued = services.token_for_user(username=username, password=password)
        return render(s.TokenOut(access_token=issued.access_token, expires_in=issued.expires_in))


def _required(value: str | None, field: str) -> str:
    if not value:
        raise Invalid.at(("body", field), "Field required", "missing")
    return value


class EnvironmentListView(ApiView):
    @extend_schema(
        operation_id="environments_list",
        parameters=PAGE,
        responses={200: s.EnvironmentList},
        tags=["environments"],
    )
    def get(self, request: Request) -> Response:
        items, pagination = paginate(
            selectors.environment_list(user=request.user), self.query(PageQuery)
        )
        return render(
            s.EnvironmentList(
                environments=[s.EnvironmentOut.of(e) for e in items], pagination=pagination
            )
        )


class AgentTypeListView(ApiView):
    @extend_schema(
        operation_id="agent_types_list",
        parameters=PAGE,
        responses={200: s.AgentTypeList},
        tags=["agents"],
    )
    def get(self, request: Request) -> Response:
        types = [
            s.AgentTypeOut(type=t.value, description=d) for t, d in AGENT_TYPE_DESCRIPTIONS.items()
        ]
        items, pagination = page_of(types, self.query(PageQuery))
        return render(s.AgentTypeList(agent_types=items, pagination=pagination))


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
    def get(self, request: Request) -> Response:
        query = self.query(s.AgentListQuery)
        agents = selectors.agent_list(
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
    def post(self, request: Request) -> Response:
        body = self.body(s.AgentCreate)
        agent, version = services.agent_create(
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


class AgentScopedView(ApiView):
    def _agent(self, agent_id: str, action: Action = Action.READ) -> Agent:
        return selectors.agent_get(
            user=self.request.user,
            environment=self.environment,
            agent_id=agent_uuid(agent_id),
            action=action,
        )


class AgentDetailView(AgentScopedView):
    conflicts = True  # renamed to a taken name

    @extend_schema(
        operation_id="agents_get",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: s.AgentOut},
        tags=["agents"],
    )
    def get(self, request: Request, agentId: str) -> Response:
        return render(s.AgentOut.of(self._agent(agentId)))

    @extend_schema(
        operation_id="agents_update",
        parameters=[AGENT_ID, ENVIRONMENT],
        request=s.AgentPatch,
        responses={200: s.AgentOut},
        tags=["agents"],
    )
    def patch(self, request: Request, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(s.AgentPatch)
        changes = body.model_dump(exclude_none=True, by_alias=False)
        services.agent_update(user=request.user, agent=agent, changes=changes)
        return render(s.AgentOut.of(self._agent(agentId)))

    @extend_schema(
        operation_id="agents_delete",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: s.DeletedAgent},
        tags=["agents"],
    )
    def delete(self, request: Request, agentId: str) -> Response:
        agent = self._agent(agentId, Action.DELETE)
        services.agent_delete(user=request.user, agent=agent)
        return render(s.DeletedAgent(agent_id=agent.pk))


class VersionListView(AgentScopedView):
    conflicts = True  # a taken version label

    @extend_schema(
        operation_id="versions_list",
        parameters=[AGENT_ID, ENVIRONMENT, *PAGE],
        responses={200: s.VersionList},
        tags=["versions"],
    )
    def get(self, request: Request, agentId: str) -> Response:
        agent = self._agent(agentId)
        items, pagination = paginate(selectors.version_list(agent=agent), self.query(PageQuery))
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
    def post(self, request: Request, agentId: str) -> Response:
        agent = self._agent(agentId, Action.EDIT)
        body = self.body(s.VersionCreate)
        version = services.version_add(
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
    def get(self, request: Request, agentId: str, versionId: str) -> Response:
        agent = self._agent(agentId)
        version = selectors.version_get(agent=agent, ref=versionId)
        return render(
            s.AgentWithVersion(agent=s.AgentOut.of(agent), version=s.VersionOut.of(version))
        )


class AgentLookupView(ApiView):
    @extend_schema(
        operation_id="agents_lookup",
        request=s.AgentLookup,
        responses={200: s.AgentWithVersion},
        parameters=[ENVIRONMENT],
        tags=["agents"],
        summary="Find an agent by name (and version label) in the environment",
    )
    def post(self, request: Request) -> Response:
        body = self.body(s.AgentLookup)
        agent = selectors.agent_get_by_name(
            user=request.user, environment=self.environment, name=body.name
        )
        version = selectors.version_get_by_label(agent=agent, label=body.version_label)
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
    def post(self, request: Request) -> Response:
        body = self.body(s.BatchGet)
        ids: dict[str, uuid.UUID | None] = {}
        for raw in body.agent_ids:
            try:
                ids[raw] = uuid.UUID(raw)
            except ValueError:
                ids[raw] = None
        valid = [i for i in ids.values() if i is not None]
        agents = selectors.agents_by_ids(
            user=request.user, environment=self.environment, agent_ids=valid
        )
        versions = selectors.latest_versions(agent_ids=list(agents))
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


class ModelListView(ApiView):
    @extend_schema(
        operation_id="models_list",
        parameters=query_parameters(s.ModelListQuery),
        responses={200: s.ModelList},
        tags=["catalog"],
    )
    def get(self, request: Request) -> Response:
        query = self.query(s.ModelListQuery)
        items, pagination = paginate(selectors.model_list(agent_type=query.agent_type), query)
        return render(s.ModelList(models=[s.ModelOut.of(m) for m in items], pagination=pagination))


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
    def get(self, request: Request) -> Response:
        query = self.query(s.RunListQuery)
        runs = selectors.run_list(
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
        parameters=[OpenApiParameter("runId", str, OpenApiParameter.PATH), ENVIRONMENT],
        responses={200: s.RunOut},
        tags=["runs"],
    )
    def get(self, request: Request, runId: str) -> Response:
        try:
            run_id = uuid.UUID(runId)
        except ValueError:
            raise Invalid.at(("path", "runId"), "must be a run id (a uuid)") from None
        run = selectors.run_get(user=request.user, environment=self.environment, run_id=run_id)
        return render(s.RunOut.of(run))


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
    def get(self, request: Request, threadId: str) -> Response:
        query = self.query(s.ThreadQuery)
        runs = selectors.thread_runs(
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
