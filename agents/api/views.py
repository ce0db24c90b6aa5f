"""What the views of agents/api share: the path and header parameters they document, the
agent id of a path (parsed once), and the base of the views of one agent.

The views themselves live by sub-domain: auth, catalogs, agents, versions, runs; each
protocol's views live in its package (agents.protocols.<name>.views).
"""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ApiView
from agents.access.permissions import Action
from agents.models import Agent
from agents.runtime import depth
from agents.selectors.agents import agent_get

AGENT_ID = OpenApiParameter(
    "agentId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Agent uuid."
)
VERSION_ID = OpenApiParameter(
    "versionId",
    str,
    OpenApiParameter.PATH,
    description="`latest`, a version number, a version uuid or an alias (`prod`).",
)
# Read on every route that runs an agent (agents.runs.request.call_depth_of).
CALL_DEPTH = OpenApiParameter(
    depth.HEADER,
    {"type": "integer", "minimum": 0, "maximum": 10**depth.MAX_HEADER_DIGITS - 1},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "How deep this call sits in a chain of agents calling agents: 0 (the default) for a "
        "client's own call; the platform's own MCP calls send the calling run's depth plus one. "
        "Past `MAX_AGENT_DEPTH` (default 5) the call is refused with a 400 before any run "
        "starts; a value that is not a whole number from 0 to "
        f"{10**depth.MAX_HEADER_DIGITS - 1} is a 400 naming the header."
    ),
)
PAGE = query_parameters(PageQuery)


def agent_uuid(value: str) -> uuid.UUID:
    return path_uuid(value, "agentId", "an agent id")


class AgentScopedView(ApiView):
    def _agent(self, agent_id: str, action: Action = Action.READ) -> Agent:
        return agent_get(
            user=self.request.user,
            environment=self.environment,
            agent_id=agent_uuid(agent_id),
            action=action,
        )
