"""The MCP server registry (docs/api.md#mcp-servers): /v1/mcp-servers and a server's live tools.

Servers of the request's environment and global ones are listed together. READ on the
environment lists, shows and lists tools; EDIT on it (the right to change its agents)
registers, changes and removes its servers; global servers are changed by superusers only.
Header values are write-only: answers carry their names, never their values.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import Field, StrictBool
from rest_framework.response import Response

from agentbuilder.api.errors import ErrorBody
from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, AsyncApiView, render
from agentbuilder.db import in_db
from agentbuilder.wire import CamelModel, OutputModel
from agents.access.permissions import Action
from agents.api.views import PAGE
from agents.mcp_client.types import McpEndpoint
from agents.mcp_registry import endpoints, selectors, services
from agents.models import NAME_PATTERN, McpServer

SERVER_ID = OpenApiParameter(
    "serverId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Server uuid."
)
Transport = Literal["streamable_http", "sse"]
HEADERS_DOC = (
    "HTTP headers sent with every request to the server (API keys, tokens). Stored "
    "encrypted and never returned: answers list their names only."
)

# ---------------------------------------------------------------- bodies


class McpServerCreate(CamelModel):
    name: str = Field(pattern=NAME_PATTERN, description="Letters, digits, '-', '_', '.'; 1–100.")
    description: str = Field("", max_length=200)
    url: str = Field(min_length=1, max_length=2000, description="http(s) URL of the endpoint.")
    transport: Transport = Field(
        "streamable_http", description="`sse` for servers that only speak the older SSE."
    )
    headers: dict[str, str] = Field(default_factory=dict, description=HEADERS_DOC)
    timeout: float = Field(30.0, gt=0, le=300, description="Seconds for one listing or call.")
    enabled: StrictBool = True
    scope: Literal["environment", "global"] = Field(
        "environment",
        description="`global`: for every environment (superusers only).",
    )


class McpServerPatch(CamelModel):
    name: str | None = Field(None, pattern=NAME_PATTERN)
    description: str | None = Field(None, max_length=200)
    url: str | None = Field(None, min_length=1, max_length=2000)
    transport: Transport | None = None
    headers: dict[str, str] | None = Field(None, description="Replaces every header.")
    timeout: float | None = Field(None, gt=0, le=300)
    enabled: StrictBool | None = None


class McpServerOut(OutputModel):
    id: uuid.UUID
    name: str
    description: str
    url: str
    transport: Transport
    environment_id: uuid.UUID | None = Field(description="null: a global server.")
    header_names: list[str]
    timeout: float
    enabled: bool
    created_at: datetime
    modified_at: datetime

    @classmethod
    def of(cls, server: McpServer) -> McpServerOut:
        return cls(
            id=server.pk,
            name=server.name,
            description=server.description,
            url=server.url,
            transport=server.transport,
            environment_id=server.environment_id,
            header_names=list(server.header_names),
            timeout=server.timeout,
            enabled=server.enabled,
            created_at=server.created_at,
            modified_at=server.modified_at,
        )


class McpServerList(OutputModel):
    mcp_servers: list[McpServerOut]
    pagination: Pagination


class DeletedMcpServer(OutputModel):
    server_id: uuid.UUID


class McpToolOut(OutputModel):
    name: str
    description: str
    input_schema: dict[str, Any]


class McpToolList(OutputModel):
    server_id: uuid.UUID
    tools: list[McpToolOut]


# ---------------------------------------------------------------- views


class McpServerListView(ApiView):
    conflicts = True

    @extend_schema(
        operation_id="mcp_servers_list",
        parameters=[*PAGE, ENVIRONMENT],
        responses={200: McpServerList},
        tags=["mcp"],
        summary="MCP servers of the environment and global ones",
    )
    def get(self, request: ApiRequest) -> Response:
        found = selectors.mcp_server_list(user=request.user, environment=self.environment)
        items, pagination = paginate(found, self.query(PageQuery))
        return render(
            McpServerList(mcp_servers=[McpServerOut.of(s) for s in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="mcp_servers_create",
        request=McpServerCreate,
        responses={201: McpServerOut},
        parameters=[ENVIRONMENT],
        tags=["mcp"],
        summary="Register an MCP server",
    )
    def post(self, request: ApiRequest) -> Response:
        body = self.body(McpServerCreate)
        server = services.mcp_server_create(
            user=request.user,
            environment=self.environment if body.scope == "environment" else None,
            name=body.name,
            description=body.description,
            url=body.url,
            transport=body.transport,
            headers=body.headers,
            timeout=body.timeout,
            enabled=body.enabled,
        )
        return render(McpServerOut.of(server), status=201)


class McpServerDetailView(ApiView):
    conflicts = True

    def _server(self, server_id: str, action: Action = Action.READ) -> McpServer:
        return selectors.mcp_server_get(
            user=self.request.user,
            environment=self.environment,
            server_id=path_uuid(server_id, "serverId", "an MCP server id"),
            action=action,
        )

    @extend_schema(
        operation_id="mcp_servers_get",
        parameters=[SERVER_ID, ENVIRONMENT],
        responses={200: McpServerOut},
        tags=["mcp"],
    )
    def get(self, request: ApiRequest, serverId: str) -> Response:
        return render(McpServerOut.of(self._server(serverId)))

    @extend_schema(
        operation_id="mcp_servers_update",
        parameters=[SERVER_ID, ENVIRONMENT],
        request=McpServerPatch,
        responses={200: McpServerOut},
        tags=["mcp"],
    )
    def patch(self, request: ApiRequest, serverId: str) -> Response:
        server = self._server(serverId, Action.EDIT)
        changes = self.body(McpServerPatch).model_dump(exclude_none=True, by_alias=False)
        server = services.mcp_server_update(user=request.user, server=server, changes=changes)
        return render(McpServerOut.of(server))

    @extend_schema(
        operation_id="mcp_servers_delete",
        parameters=[SERVER_ID, ENVIRONMENT],
        responses={200: DeletedMcpServer},
        tags=["mcp"],
    )
    def delete(self, request: ApiRequest, serverId: str) -> Response:
        server = self._server(serverId, Action.EDIT)
        server_id = server.pk
        services.mcp_server_delete(user=request.user, server=server)
        return render(DeletedMcpServer(server_id=server_id))


class McpServerToolsView(AsyncApiView):
    upstream = True

    @extend_schema(
        operation_id="mcp_servers_tools",
        parameters=[SERVER_ID, ENVIRONMENT],
        responses={
            200: McpToolList,
            409: OpenApiResponse(
                ErrorBody,
                description="The server's address is no longer allowed (MCP_ALLOWED_HOSTS, "
                "private networks): `detail` says why.",
            ),
        },
        tags=["mcp"],
        summary="The server's tools, fetched from it now (502 or 504 when it cannot answer, "
        "409 when its address is no longer allowed)",
    )
    async def get(self, request: ApiRequest, serverId: str) -> Response:
        server_id, name, endpoint = await in_db(self._endpoint)(serverId)
        tools = await endpoints.mcp_server_tools(name=name, endpoint=endpoint)
        return render(
            McpToolList(
                server_id=server_id,
                tools=[
                    McpToolOut(name=t.name, description=t.description, input_schema=t.input_schema)
                    for t in tools
                ],
            )
        )

    def _endpoint(self, server_id: str) -> tuple[uuid.UUID, str, McpEndpoint]:
        server = selectors.mcp_server_get(
            user=self.request.user,
            environment=self.environment,
            server_id=path_uuid(server_id, "serverId", "an MCP server id"),
        )
        return server.pk, server.name, endpoints.mcp_server_endpoint(server)
