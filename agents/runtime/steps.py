"""What each kind of step of a run's trace reports (docs/api.md#run-steps): typed here,
written as the trace's camelCase JSON in one place (`step_json`). A new kind of step (an
approval, a budget check) is a new dataclass here."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from guardrails.engines.base import Kind, Stage

# A field whose None means "not reported" (a tool call has a result or an error, a
# guardrail step the source it screened) rather than "reported as null".
OMIT_NONE = {"omit_none": True}


@dataclass(frozen=True)
class ModelCallStep:
    model: str
    tokens_usage: dict[str, int]
    time_to_first_token_ms: int | None = None
    stop_reason: str | None = None
    cost_usd: float | None = None  # None: the model has no price in the catalog
    error: str | None = field(default=None, metadata=OMIT_NONE)  # why a failed call failed


@dataclass(frozen=True)
class ToolCallStep:
    name: str
    arguments: str
    result: str | None = field(default=None, metadata=OMIT_NONE)
    error: str | None = field(default=None, metadata=OMIT_NONE)
    call_id: str | None = field(default=None, metadata=OMIT_NONE)  # the model's id of the call


@dataclass(frozen=True)
class RetrievalStep:
    query: str
    hxql_query: str
    hits: list[dict[str, Any]]


@dataclass(frozen=True)
class ContextSource:
    """Where a text a context-stage guardrail screened came from."""

    source: str  # retrieval, tool_result
    tool: str | None = field(default=None, metadata=OMIT_NONE)
    call_id: str | None = field(default=None, metadata=OMIT_NONE)
    chunk_id: str | None = field(default=None, metadata=OMIT_NONE)
    doc_id: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class MatchedText:
    """Where in the checked text the deciding evidence is, and that text (cut)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Detected:
    """What a guardrail that blocked found (docs/api.md#guardrails): the kind of attack or
    content (None where the engine cannot tell), the detector that decided, how sure it was
    (0..1) and, where there is one, the matched text."""

    kind: Kind | None
    detector: str
    score: float
    span: MatchedText | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class GuardrailStep:
    name: str
    stage: Stage
    action: str  # BLOCKED, DROPPED, REPLACED
    came_from: ContextSource | None = field(default=None, metadata=OMIT_NONE)
    text: str | None = field(default=None, metadata=OMIT_NONE)  # the beginning of what it dropped
    detected: Detected | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ApprovalRequestStep:
    """A call the run waits on: nothing ran (docs/api.md#tool-approvals)."""

    approval_request_id: str
    tool: str
    arguments: str


@dataclass(frozen=True)
class ApprovalDecisionStep:
    approval_request_id: str
    tool: str
    decision: str  # approve, reject
    by: str
    decided_at: str
    message: str | None = field(default=None, metadata=OMIT_NONE)


StepDetail = (
    ModelCallStep
    | ToolCallStep
    | RetrievalStep
    | GuardrailStep
    | ApprovalRequestStep
    | ApprovalDecisionStep
)


def step_json(detail: StepDetail | ContextSource | Detected | MatchedText) -> dict[str, Any]:
    """The detail's fields in camelCase; a ContextSource's fields join its step's, what a
    guardrail detected is an object of its own."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(detail):
        value = getattr(detail, f.name)
        if value is None and f.metadata.get("omit_none"):
            continue
        if isinstance(value, ContextSource):
            out.update(step_json(value))
            continue
        if isinstance(value, Detected | MatchedText):
            value = step_json(value)
        out[_camel(f.name)] = value
    return out


def _camel(name: str) -> str:
    return re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)
