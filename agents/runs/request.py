"""What a view asks for when it starts a run: one typed request, whatever the protocol."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.llm.base import Message, ToolSpec
from agents.mcp.types import McpServerRequest
from agents.models import Environment
from agents.runtime.spec import ToolChoice

CHAT_TYPES = ("tool", "rag")
TASK_TYPES = ("task",)


@dataclass(frozen=True)
class RunRequest:
    """One call of an agent's version, as a protocol's view read it from the request."""

    user: Any
    environment: Environment
    agent_id: uuid.UUID
    version_ref: str
    protocol: str  # as the run record names it: native, respond, process, chat.completions
    route: str  # as a refusal for the wrong agent type names it
    agent_types: tuple[str, ...]  # the agent types the route runs
    messages: tuple[Message, ...] = ()
    inputs: dict[str, Any] | None = None  # task agents
    guardrails: tuple[str, ...] = ()  # on top of the config's, by name
    thread_id: str = ""
    rag_overrides: Mapping[str, Any] | None = None  # field names of agents.rag.OVERRIDES
    max_iterations: int | None = None  # a protocol's own limit, for tool agents
    mcp_servers: tuple[McpServerRequest, ...] = ()  # for this run only, on top of the config's
    # /v1/openai: the client's tools (errors name them at ["body", "tools", i]), its
    # tool_choice and parallel_tool_calls; tool agents only.
    client_tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
