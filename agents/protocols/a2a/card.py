"""An agent's A2A agent card: who it is, what it can do (skills from its tools, its RAG
settings or its input schema), where its JSON-RPC endpoint is (both dialects, one URL) and
how to authenticate (the API's Bearer token).

Served as the SDK serves cards (`agent_card_to_dict`): the 1.0 card with 0.3's fields
(`url`, `protocolVersion`, `preferredTransport`, `security`) merged in, so clients of
either version read it.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import a2a_pb2 as pb

from agents.configs import AgentConfig, McpTool, TaskAgentConfig, ToolAgentConfig
from agents.protocols.a2a.dialects import Dialect

MODES_IN = ["text/plain", "application/json"]
MODES_OUT = ["text/plain", "application/json"]
BEARER = "bearer"
RAG_SKILL = "Answers questions from the environment's documents and names its sources."
SCHEMA_CHARS = 2000  # of a task agent's inputSchema in its skill's description


def agent_card(
    *,
    name: str,
    description: str,
    agent_type: str,
    config: AgentConfig,
    version: int,
    url: str,
    docs_url: str,
) -> pb.AgentCard:
    """The card of an agent's version at the endpoint `url`."""
    return pb.AgentCard(
        name=name,
        description=description or f"The {agent_type} agent {name}.",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=d.value)
            for d in (Dialect.V1, Dialect.V03)
        ],
        version=str(version),
        documentation_url=docs_url,
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            BEARER: pb.SecurityScheme(
                http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="JWT",
                    description="A token from POST /v1/auth/token, as on the REST API.",
                )
            )
        },
        security_requirements=[pb.SecurityRequirement(schemes={BEARER: pb.StringList()})],
        default_input_modes=MODES_IN,
        default_output_modes=MODES_OUT,
        skills=skills(name, description, agent_type, config),
    )


def skills(
    name: str, description: str, agent_type: str, config: AgentConfig
) -> list[pb.AgentSkill]:
    if isinstance(config, TaskAgentConfig):
        schema = json.dumps(config.input_schema, ensure_ascii=False)[:SCHEMA_CHARS]
        return [
            pb.AgentSkill(
                id=name,
                name=name,
                description=f"{description or 'A task agent.'} Send its inputs as a data part "
                f"(a JSON object) matching this JSON Schema: {schema}",
                tags=["task"],
                input_modes=["application/json"],
                output_modes=MODES_OUT,
            )
        ]
    if isinstance(config, ToolAgentConfig):
        found = [
            pb.AgentSkill(id=tool.name, name=tool.name, description=tool.description, tags=[kind])
            for tool in config.tools
            if not isinstance(tool, McpTool)
            for kind in [tool.tool_type]
        ]
        if found:
            return found
    return [
        pb.AgentSkill(
            id=name,
            name=name,
            description=description or (RAG_SKILL if agent_type == "rag" else name),
            tags=[agent_type],
            input_modes=["text/plain"],
            output_modes=MODES_OUT,
        )
    ]


def card_json(card: pb.AgentCard) -> dict[str, Any]:
    return agent_card_to_dict(card)
