"""What a view asks for when it starts a run: one typed request, whatever the protocol."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentbuilder.errors import Invalid
from agentbuilder.users import User
from agents.llm.base import Message, ToolSpec
from agents.mcp_registry.request import McpServerRequest
from agents.models import Environment
from agents.runtime import depth
from agents.runtime.spec import ToolChoice

CHAT_TYPES = ("tool", "rag")
TASK_TYPES = ("task",)


@dataclass(frozen=True)
class RunRequest:
    """One call of an agent's version, as a protocol's view read it from the request."""

    user: User
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
    rag_overrides: Mapping[str, Any] | None = None  # field names of retrieval.rag.OVERRIDES
    max_iterations: int | None = None  # a protocol's own limit, for tool agents
    mcp_servers: tuple[McpServerRequest, ...] = ()  # for this run only, on top of the config's
    # /v1/openai: the client's tools (errors name them at ["body", "tools", i]), its
    # tool_choice and parallel_tool_calls; tool agents only.
    client_tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    # How many agent calls led to this one (agents.runtime.depth): 0 for a client's own.
    call_depth: int = 0
    # The schedule whose tick asks for it (agents.schedules), kept on its run.
    schedule_id: uuid.UUID | None = None


def call_depth_of(headers: Mapping[str, str]) -> int:
    """The call depth a request's `Agentbuilder-Call-Depth` header gives (0 without one).
    Raises Invalid at the header."""
    value = headers.get(depth.HEADER)
    if value is None:
        return 0
    try:
        return depth.parse_header(value)
    except ValueError as exc:
        raise Invalid.at(("header", depth.HEADER), str(exc)) from None
