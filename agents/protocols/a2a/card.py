"""An agent's A2A agent card: who it is, what it can do (skills from its tools, its RAG
settings or its input schema), where its JSON-RPC endpoint is (both dialects, one URL) and
how to authenticate (the API's Bearer token, or OAuth 2.1's authorization code flow of
agents.access.oauth, whose tokens are Bearer tokens too).

One card, written in the dialect the client speaks (agents.protocols.a2a.dialects.card_dialect):
1.0's protobuf JSON (`securitySchemes.bearer.httpAuthSecurityScheme`, `securityRequirements`,
`capabilities.extendedAgentCard`), or 0.3's JSON Schema shape (`securitySchemes.bearer.type`
"http", `security`, `url`, `supportsAuthenticatedExtendedCard`) with 1.0's
`supportedInterfaces` beside it, as @a2a-js/sdk's server writes it, so a 1.0 client that sends
no version header still finds the 1.0 interface. Never a mix of the two in one object.

The extended card (`GetExtendedAgentCard`, `agent/getAuthenticatedExtendedCard`) is the card
with one extension, EXTENDED_URI, whose params are the caller's own view: whether it may
invoke the agent, and the versions and aliases it may call, each with its endpoint.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.compat.v0_3 import conversions
from a2a.types import a2a_pb2 as pb
from django.conf import settings
from google.protobuf.json_format import MessageToDict

from agents.access.oauth.resources import A2A, INVOKE, SCOPES
from agents.configs import AgentConfig, McpTool, TaskAgentConfig, ToolAgentConfig
from agents.protocols.a2a.dialects import Dialect

MODES_IN = ["text/plain", "application/json"]
MODES_OUT = ["text/plain", "application/json"]
BEARER = "bearer"
OAUTH = "oauth2"
RAG_SKILL = "Answers questions from the environment's documents and names its sources."
SCHEMA_CHARS = 2000  # of a task agent's inputSchema in its skill's description
EXTENDED_URI = "urn:agentbuilder:a2a:caller-view"


def agent_card(
    *,
    name: str,
    description: str,
    agent_type: str,
    config: AgentConfig,
    version: int,
    url: str,
    docs_url: str,
    base_url: str,
) -> pb.AgentCard:
    """The card of an agent's version at the endpoint `url`, on the server at `base_url`."""
    return pb.AgentCard(
        name=name,
        description=description or f"The {agent_type} agent {name}.",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=d.value)
            for d in (Dialect.V1, Dialect.V03)
        ],
        version=str(version),
        documentation_url=docs_url,
        capabilities=pb.AgentCapabilities(
            # Deliveries through the webhooks (agents.protocols.a2a.push), where they are on.
            streaming=True,
            push_notifications=bool(settings.WEBHOOKS_ENABLED),
            extended_agent_card=True,
        ),
        security_schemes={
            BEARER: pb.SecurityScheme(
                http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="JWT",
                    description="A token from POST /v1/auth/token, as on the REST API.",
                )
            ),
            OAUTH: oauth_scheme(base_url),
        },
        security_requirements=[
            pb.SecurityRequirement(schemes={BEARER: pb.StringList()}),
            pb.SecurityRequirement(schemes={OAUTH: pb.StringList(list=[INVOKE])}),
        ],
        default_input_modes=MODES_IN,
        default_output_modes=MODES_OUT,
        skills=skills(name, description, agent_type, config),
    )


def oauth_scheme(base_url: str) -> pb.SecurityScheme:
    """The authorization server's flow (docs/api.md#oauth): what an A2A client needs to get a
    token for these agents without one issued by hand."""
    return pb.SecurityScheme(
        oauth2_security_scheme=pb.OAuth2SecurityScheme(
            description="OAuth 2.1 authorization code with PKCE (S256); register at "
            f"{base_url}/oauth/register and ask for resource {base_url}{A2A}.",
            flows=pb.OAuthFlows(
                authorization_code=pb.AuthorizationCodeOAuthFlow(
                    authorization_url=f"{base_url}/oauth/authorize",
                    token_url=f"{base_url}/oauth/token",
                    refresh_url=f"{base_url}/oauth/token",
                    scopes=SCOPES,
                    pkce_required=True,
                )
            ),
            oauth2_metadata_url=f"{base_url}/.well-known/oauth-authorization-server",
        )
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


def extended_card(card: pb.AgentCard, view: dict[str, Any]) -> pb.AgentCard:
    """`card` with the caller's view (`{"canInvoke", "versions", "aliases"}`) as the params
    of the EXTENDED_URI extension: what the public card cannot say, since it is the same
    for every reader."""
    extended = pb.AgentCard()
    extended.CopyFrom(card)
    extension = pb.AgentExtension(
        uri=EXTENDED_URI,
        description="What this caller may do with the agent: canInvoke, and the versions "
        "and aliases it may call, each with its JSON-RPC endpoint.",
        required=False,
    )
    extension.params.update(view)
    extended.capabilities.extensions.append(extension)
    return extended


def card_json(card: pb.AgentCard, dialect: Dialect) -> dict[str, Any]:
    """The card as a client of `dialect` reads it."""
    if dialect is Dialect.V1:
        return MessageToDict(card)
    legacy = conversions.to_compat_agent_card(card)
    body: dict[str, Any] = legacy.model_dump(mode="json", by_alias=True, exclude_none=True)
    body["supportedInterfaces"] = MessageToDict(card)["supportedInterfaces"]
    return body
