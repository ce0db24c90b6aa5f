"""A tools/call as a run request: the tool's name picks the agent (and version), its
arguments become the turn's message or the task's inputs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal

from mcp_types import ElicitResult
from pydantic import Field, field_validator, model_validator

from agentbuilder.errors import ErrorItem, Invalid
from agentbuilder.users import User
from agentbuilder.wire import CamelModel, parse
from agents.access.permissions import AgentHeld
from agents.llm.base import Message
from agents.models import Agent, AgentType, Environment
from agents.protocols.mcp_server.tools import MESSAGE_MAX_CHARS, THREAD_ID_MAX_CHARS
from agents.protocols.names import agent_reference
from agents.protocols.native.request import ApprovalsBody
from agents.runs.request import RunRequest
from agents.selectors.versions import version_ref_parse
from agents.services.approvals import DecisionIn

PROTOCOL = "mcp"
ROUTE = "the MCP server"
# Where a call's locations start: the tools/call params, as the client sent them.
ARGUMENTS = "arguments"
# An agent's name (100), `@`, and a version reference (a version id, 36; an alias, 50):
# anything longer names no tool, and an unknown tool's error quotes the name it was given.
TOOL_NAME_MAX_CHARS = 160


@dataclass(frozen=True)
class Caller:
    """Who calls, in which environment: read from the Bearer token before the MCP SDK
    sees the request, and handed to the tool handlers in the ASGI scope."""

    user: User
    environment: Environment
    call_depth: int = 0  # its Agentbuilder-Call-Depth header (agents.runtime.depth)
    scopes: frozenset[str] | None = None  # an OAuth token's (None: a JWT, all it may do)


class Approvals(ApprovalsBody):
    """`approvals`: POST /v1/runs/{runId}/approvals's body, with its run."""

    run_id: uuid.UUID


class ChatArguments(CamelModel):
    message: str | None = Field(None, min_length=1, max_length=MESSAGE_MAX_CHARS)
    thread_id: str | None = Field(None, min_length=1, max_length=THREAD_ID_MAX_CHARS)
    approvals: Approvals | None = None

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the message is empty")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> ChatArguments:
        if (self.message is None) == (self.approvals is None):
            where = "message" if self.message is None else "approvals"
            raise Invalid.at(
                (where,), "give a `message`, or `approvals` to decide what a run waits on"
            )
        return self


# Where a retry's answers to the input-required result are (the tools/call params).
INPUT_RESPONSES = "inputResponses"
DECISION_MESSAGE_MAX_CHARS = 4000


def decisions_of_responses(
    responses: dict[str, Any],
) -> list[tuple[tuple[str | int, ...], DecisionIn]]:
    """The decisions a retry's `inputResponses` carry (docs/api.md#mcp): each key an approval
    request's id, each an elicitation's answer. `decline`, and `cancel` (a form dismissed
    without a choice), reject: a call nobody approved does not run. Raises Invalid at the
    path of each answer that does not fit."""
    decisions, errors = [], []
    for key, response in responses.items():
        at: tuple[str | int, ...] = (INPUT_RESPONSES, key)
        try:
            request_id = uuid.UUID(key)
        except ValueError:
            errors.append(ErrorItem(at, "not the id of an approval request"))
            continue
        if not isinstance(response, ElicitResult):
            errors.append(ErrorItem(at, "answer the elicitation with its form"))
            continue
        content = response.content or {}
        decision = content.get("decision") if response.action == "accept" else "reject"
        message = content.get("message") if response.action == "accept" else None
        if decision not in ("approve", "reject"):
            errors.append(ErrorItem((*at, "content", "decision"), "'approve' or 'reject'"))
            continue
        if message is not None and (
            not isinstance(message, str) or len(message) > DECISION_MESSAGE_MAX_CHARS
        ):
            errors.append(
                ErrorItem(
                    (*at, "content", "message"),
                    f"text of at most {DECISION_MESSAGE_MAX_CHARS} characters",
                )
            )
            continue
        verdict: Literal["approve", "reject"] = "approve" if decision == "approve" else "reject"
        decisions.append((at, DecisionIn(request_id, verdict, message or "")))
    if errors:
        raise Invalid(errors)
    return decisions


# The run keeps ids this long (Run.client_request_id); a longer one cannot be canceled.
MAX_CLIENT_REQUEST_ID = 100


def tool_reference(name: str) -> tuple[str, str]:
    """(agent name, version ref) of a tool name: `calculator` runs the latest version,
    `calculator@3` or `calculator@prod` another. Raises Invalid at `name`."""
    if len(name) > TOOL_NAME_MAX_CHARS:
        raise Invalid.at(("name",), f"a tool's name is at most {TOOL_NAME_MAX_CHARS} characters")
    reference = agent_reference(name)
    if reference is None:
        raise Invalid.at(("name",), "name a tool: 'name' or 'name@version'")
    agent_name, version_ref = reference
    try:
        version_ref_parse(version_ref)
    except Invalid:
        raise Invalid.at(
            ("name",), "the version after '@' must be a number, 'latest', an alias or a version id"
        ) from None
    return agent_name, version_ref


def run_request(
    caller: Caller,
    found: AgentHeld,
    version_ref: str,
    arguments: dict[str, Any] | None,
    request_id: str | int | None = None,
) -> RunRequest:
    """The run of the agent found, with the caller's grants read with it (the run's start
    reads them no more), that the call's arguments ask for. Raises Invalid, located under
    `arguments`, before any run exists when a tool or RAG agent's arguments do not fit; a
    task agent's inputs are checked against its version's schema when the run opens."""
    agent = found.agent
    request = RunRequest(
        user=caller.user,
        environment=caller.environment,
        agent_id=agent.pk,
        version_ref=version_ref,
        protocol=PROTOCOL,
        route=ROUTE,
        agent_types=(agent.agent_type,),
        call_depth=caller.call_depth,
        client_request_id=client_request_id(request_id),
        held=found.held,
    )
    if agent.agent_type == AgentType.TASK:
        return replace(request, inputs=dict(arguments or {}))
    chat = parse(ChatArguments, arguments or {}, ARGUMENTS)
    assert chat.message is not None, "a call with approvals starts no run (approvals_of)"
    return replace(
        request, messages=(Message("user", chat.message),), thread_id=chat.thread_id or ""
    )


def approvals_of(agent: Agent, arguments: dict[str, Any] | None) -> Approvals | None:
    """The decisions a call of a tool or RAG agent carries instead of a message, if it does
    (docs/api.md#mcp). Raises Invalid, under `arguments`, for arguments that do not fit."""
    if agent.agent_type == AgentType.TASK:
        return None
    return parse(ChatArguments, arguments or {}, ARGUMENTS).approvals


def client_request_id(request_id: str | int | None) -> str:
    """The JSON-RPC id as the run keeps it, for `notifications/cancelled` to find: its text
    (1 and "1" are one id to the SDK too), none past what the run's column holds."""
    if request_id is None:
        return ""
    text = str(request_id)
    return text if len(text) <= MAX_CLIENT_REQUEST_ID else ""


def located_in_arguments(exc: Invalid) -> Invalid:
    """The run path's locations (`body.inputs.…`) as this protocol's (`arguments.…`)."""
    items = []
    for item in exc.errors:
        loc = item.loc
        if loc[:2] == ("body", "inputs"):
            loc = (ARGUMENTS, *loc[2:])
        items.append(ErrorItem(loc, item.msg, item.type))
    return Invalid(items, run_id=exc.run_id)


def run_id_of(exc: Exception) -> uuid.UUID | None:
    """The failed run a refusal was recorded as, if it got that far."""
    run_id = getattr(exc, "run_id", None)
    return run_id if isinstance(run_id, uuid.UUID) else None
