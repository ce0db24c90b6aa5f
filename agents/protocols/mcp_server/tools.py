"""An agent as an MCP tool: its name, title, description and input schema."""

from __future__ import annotations

from typing import Any

from mcp_types import Tool

from agents.models import Agent, AgentType, AgentVersion

MESSAGE_MAX_CHARS = 100_000
THREAD_ID_MAX_CHARS = 100

# Tool and RAG agents: one turn of a conversation.
CHAT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "minLength": 1,
            "maxLength": MESSAGE_MAX_CHARS,
            "description": "What to ask the agent (required, unless `approvals` is given).",
        },
        "threadId": {
            "type": "string",
            "minLength": 1,
            "maxLength": THREAD_ID_MAX_CHARS,
            "description": "Continue a conversation: the same id on every turn, chosen by "
            "the caller. The agent sees the earlier turns of this caller's thread.",
        },
        "approvals": {
            "type": "object",
            "description": "Instead of `message`: a person's decision on the tool calls a "
            "run of this agent waits on (a result with status `awaiting_approval` named "
            "them). The same run goes on, and this call answers as it ends.",
            "properties": {
                "runId": {"type": "string", "format": "uuid"},
                "decisions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 100,
                    "items": {
                        "type": "object",
                        "properties": {
                            "approvalRequestId": {"type": "string", "format": "uuid"},
                            "decision": {"enum": ["approve", "reject"]},
                            "message": {"type": "string", "maxLength": 4000},
                        },
                        "required": ["approvalRequestId", "decision"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["runId", "decisions"],
            "additionalProperties": False,
        },
    },
    # `message`, or `approvals` (checked by the server: a schema's oneOf at the root is
    # more than some clients' models accept).
    "required": [],
    "additionalProperties": False,
}

FALLBACK_DESCRIPTIONS = {
    AgentType.TOOL: "Ask the agent '{name}' and get its answer.",
    AgentType.RAG: "Ask the agent '{name}' a question about its documents.",
    AgentType.TASK: "Run the task agent '{name}' with its inputs.",
}


def agent_tool(agent: Agent, version: AgentVersion) -> Tool:
    """The tool that runs `agent`; a task agent's schema comes from `version` (its latest)."""
    description = agent.description or FALLBACK_DESCRIPTIONS[AgentType(agent.agent_type)].format(
        name=agent.name
    )
    return Tool(
        name=agent.name,
        title=agent.display_name or None,
        description=description,
        input_schema=input_schema(agent.agent_type, version.config),
    )


def input_schema(agent_type: str, config: dict[str, Any]) -> dict[str, Any]:
    if agent_type != AgentType.TASK:
        return CHAT_INPUT_SCHEMA
    schema = config.get("inputSchema")
    # MCP wants an object schema at the root; config validation requires one for task
    # agents, this only keeps a hand-edited row from breaking the whole listing.
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object", "properties": {}}
    return schema
