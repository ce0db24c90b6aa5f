"""Tool calls a person approves before they run (docs/api.md#tool-approvals): which calls
need it, and what a paused turn keeps so that a decision resumes it where it stopped.

A tool loop whose model calls a gated tool runs the step's other calls, then ends the turn
with the gated ones as approval requests and its state (`PausedTurn`): the messages so far,
the next iteration, the usage spent. The service keeps that state with the run; a decision
hands it back (`Resume`), the approved calls run, the rejected ones answer the model with
the approver's words, and the loop goes on from the next model call. Nothing that ran runs
again: the state holds the results of what did.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from agents.configs import ApprovalPolicy, ArgumentsMatch
from agents.llm.base import Message, ToolCallPart, Usage
from agents.runtime.tools.base import ToolFailure, schema_problems

DEFAULT_TTL_SECONDS = 86_400


def needs_approval(policy: ApprovalPolicy | None, raw_arguments: str) -> bool:
    """Whether a call with these arguments waits for a person. Fails closed: arguments that
    do not parse as an object, or a schema that cannot be used, need approval."""
    if policy is None or policy == "never":
        return False
    if policy == "always" or not isinstance(policy, ArgumentsMatch):
        return True
    try:
        arguments = json.loads(raw_arguments.strip() or "{}")
    except json.JSONDecodeError:
        return True
    if not isinstance(arguments, dict):
        return True
    try:
        return not schema_problems(arguments, policy.arguments_match)
    except ToolFailure:
        return True


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that waits for a decision: in the run's events and its protocols' answers."""

    approval_request_id: str
    call_id: str
    name: str
    arguments: str


def approval_request(call: ToolCallPart) -> ApprovalRequest:
    return ApprovalRequest(str(uuid.uuid4()), call.call_id, call.name, call.arguments)


@dataclass(frozen=True)
class PausedTurn:
    """What a tool loop needs to go on after its decisions: kept with the run."""

    messages: tuple[Message, ...]  # up to the model's message whose calls wait
    iteration: int  # the loop's next iteration
    retries: int  # structured-output retries spent
    requests: tuple[ApprovalRequest, ...]
    usage: Usage  # spent so far, which the resumed turn's usage adds to
    model_calls: int = 0


@dataclass(frozen=True)
class Decision:
    approval_request_id: str
    approve: bool
    message: str = ""
    by: str = ""  # who decided, as the trace names them
    at: str = ""  # when, ISO 8601


@dataclass(frozen=True)
class Resume:
    """A paused turn with a decision for each of its requests."""

    turn: PausedTurn
    decisions: tuple[Decision, ...]

    def decision(self, request: ApprovalRequest) -> Decision:
        for decision in self.decisions:
            if decision.approval_request_id == request.approval_request_id:
                return decision
        raise LookupError(request.approval_request_id)


def rejected_result(name: str, decision: Decision) -> str:
    """What the model reads for a call a person rejected."""
    said = f": {decision.message}" if decision.message else ""
    who = f" by {decision.by}" if decision.by else ""
    return f"The call of {name} was rejected{who} and did not run{said}"


def refused_result(name: str) -> str:
    """What the model reads for a gated call where the run cannot wait for a person (chat
    completions, a request with its own MCP servers or tools)."""
    return (
        f"{name} needs a person's approval before it runs, and this request cannot wait "
        "for one: it did not run. Tell the user so, or do without it."
    )
