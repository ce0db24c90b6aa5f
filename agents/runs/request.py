"""What a view asks for when it starts a run: one typed request, whatever the protocol."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentbuilder.errors import Invalid
from agentbuilder.users import User
from agents.llm.base import Attachment, Message, ToolCallPart, ToolSpec
from agents.mcp_registry.request import McpServerRequest
from agents.models import Environment
from agents.runtime import depth
from agents.runtime.spec import AgentSpec, ToolChoice
from agents.webhooks.request import WebhookBody

CHAT_TYPES = ("tool", "rag")
TASK_TYPES = ("task",)


@dataclass(frozen=True)
class RunRequest:
    """One call of an agent's version, as a protocol's view read it from the request."""

    user: User
    environment: Environment
    agent_id: uuid.UUID | None  # None: the agent `agent_name` names
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
    # The client's own id of the request (MCP's JSON-RPC id), which its cancel names.
    client_request_id: str = ""
    # How many agent calls led to this one (agents.runtime.depth): 0 for a client's own.
    call_depth: int = 0
    # The schedule whose tick asks for it (agents.schedules), kept on its run.
    schedule_id: uuid.UUID | None = None
    # The body's `webhook` (agents.webhooks): this run's events go there too.
    webhook: WebhookBody | None = None
    # False: the client waits for the whole answer (a route's non-streamed form), so the
    # run's model calls may ask for whole answers too (RunInput.stream). A request kept for
    # later (`request_json`) streams: who follows a background run reads its deltas.
    stream: bool = True
    # A route that names the agent (`model`): looked up by name (ignoring case) in the
    # environment in the same statement as its version and the caller's grants.
    agent_name: str = ""
    # The caller's grants on `agent_id`, when the route read them with the agent in this
    # request (agent_seen_by_name): the start checks them and reads no others. Never kept
    # (`request_json`): a run resumed or taken by a worker reads them as they stand then.
    held: frozenset[str] | None = None
    # A validated config run in place of the version's, never saved as one (the playground's
    # "Try without saving"); the run keeps it as its `draft_config`.
    draft: dict[str, Any] | None = None


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


# ---------------------------------------------------------------- kept for a worker

# The protocols that can tell their client a run waits for a person's approval, and take
# the decision (docs/api.md#tool-approvals). Elsewhere a gated tool call is refused.
PAUSING_PROTOCOLS = frozenset({"native", "playground", "process", "a2a", "mcp"})


def can_pause(request: RunRequest, spec: AgentSpec) -> bool:
    """Whether a run of `request` may wait for approvals: a tool agent's, on a protocol that
    can say so, with a request that can be kept until the decision (`request_json`)."""
    return (
        spec.agent_type == "tool"
        and request.protocol in PAUSING_PROTOCOLS
        and not request.mcp_servers
        and not request.client_tools
    )


def request_json(request: RunRequest) -> dict[str, Any]:
    """What a worker needs to run `request` later (agents.runs.background), as JSON: all
    but who asks, where, which agent and version, which the run's row says. Attachments go
    as base64 (the run's `messages` keep only their sizes). Request-only MCP servers and
    client tools, whose headers and callers live with the request, are not carried: the
    protocols that take them offer no background runs."""
    if request.mcp_servers or request.client_tools:
        raise ValueError("a request with its own MCP servers or client tools cannot wait")
    return {
        "protocol": request.protocol,
        "route": request.route,
        "agentTypes": list(request.agent_types),
        "messages": [kept_message_json(m) for m in request.messages],
        "inputs": request.inputs,
        "guardrails": list(request.guardrails),
        "threadId": request.thread_id,
        "ragOverrides": dict(request.rag_overrides) if request.rag_overrides else None,
        "maxIterations": request.max_iterations,
        "callDepth": request.call_depth,
        "draft": request.draft,
    }


def request_from_json(
    data: Mapping[str, Any],
    *,
    user: User,
    environment: Environment,
    agent_id: uuid.UUID,
    version_ref: str,
) -> RunRequest:
    """`request_json`'s request back, for `user` in `environment`."""
    return RunRequest(
        user=user,
        environment=environment,
        agent_id=agent_id,
        version_ref=version_ref,
        protocol=data["protocol"],
        route=data["route"],
        agent_types=tuple(data["agentTypes"]),
        messages=tuple(kept_message_from_json(m) for m in data["messages"]),
        inputs=data["inputs"],
        guardrails=tuple(data["guardrails"]),
        thread_id=data["threadId"],
        rag_overrides=data["ragOverrides"],
        max_iterations=data["maxIterations"],
        call_depth=data["callDepth"],
        draft=data.get("draft"),  # absent from the requests kept before drafts
    )


def kept_message_json(message: Message) -> dict[str, Any]:
    """A runtime message as JSON, whole (attachments as base64): kept to be run later."""
    return {
        "role": message.role,
        "text": message.text,
        "toolCalls": [[c.call_id, c.name, c.arguments] for c in message.tool_calls],
        "attachments": [
            {
                "kind": a.kind,
                "mediaType": a.media_type,
                "data": base64.b64encode(a.data).decode("ascii"),
                "name": a.name,
                "loc": list(a.loc),
            }
            for a in message.attachments
        ],
        "toolCallId": message.tool_call_id,
        "name": message.name,
        "isError": message.is_error,
    }


def kept_message_from_json(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        text=data["text"],
        tool_calls=tuple(ToolCallPart(*call) for call in data["toolCalls"]),
        attachments=tuple(
            Attachment(
                kind=a["kind"],
                media_type=a["mediaType"],
                data=base64.b64decode(a["data"]),
                name=a["name"],
                loc=tuple(a["loc"]),
            )
            for a in data["attachments"]
        ),
        tool_call_id=data["toolCallId"],
        name=data["name"],
        is_error=data["isError"],
    )
