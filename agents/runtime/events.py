"""The closed set of events a run produces; every wire protocol encodes these.

Every stream starts with ResponseCreated and ends with exactly one of ResponseCompleted
or ResponseFailed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from agents.llm.base import Usage
from agents.runtime.approvals import ApprovalRequest, PausedTurn
from agents.runtime.failures import FailureCode
from agents.runtime.steps import Detected, step_json
from guardrails.engines.base import Stage


@dataclass(frozen=True)
class ResponseCreated:
    response_id: str
    model: str
    created_at: int  # epoch seconds


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # complete JSON object text


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


class GuardrailVerdict(TypedDict):
    action: str
    name: str
    stage: Stage
    detected: NotRequired[dict[str, Any]]  # {kind, detector, score, span?}: Detected


class CustomOutputs(TypedDict, total=False):
    """What a run adds to its answer besides the text (`customOutputs` on the native API,
    `custom_outputs` on chat completions; docs/api.md#rag-outputs): a RAG agent's sources,
    mode and hallucination check, a blocking guardrail's verdict."""

    sourceNodes: list[dict[str, Any]]
    ragMode: str
    hallucinationCheck: dict[str, Any]
    guardrail: GuardrailVerdict


@dataclass(frozen=True)
class Intervention:
    """A guardrail that blocked the run: its message replaced the answer."""

    name: str
    stage: Stage
    message: str
    action: str = "BLOCKED"
    detected: Detected | None = None  # what it found; None from a writer that did not say

    def custom_outputs(self) -> CustomOutputs:
        verdict: GuardrailVerdict = {"action": self.action, "name": self.name, "stage": self.stage}
        if self.detected is not None:
            verdict["detected"] = step_json(self.detected)
        return {"guardrail": verdict}


@dataclass(frozen=True)
class ResponseCompleted:
    usage: Usage
    text: str = ""
    # The validated object of a structured answer (structured output, task output schema).
    structured: dict[str, Any] | None = None
    # A tool agent's structured_output answer *is* the object: the native API answers with
    # it alone (the source document's PersonExtractor). A task agent's stays a message.
    object_answer: bool = False
    custom_outputs: CustomOutputs = field(default_factory=lambda: CustomOutputs())
    # The final answer as the client gets it: the object of an object answer, else the text
    # of the final message (what was released of it, or `text`). The runtime sets it; left
    # out, it is worked out from the fields above.
    answer: str | dict[str, Any] | None = None
    # The guardrail whose message replaced the answer, if one did.
    intervention: Intervention | None = None
    # The turn ended waiting for the client: the model called tools the client brought
    # (/v1/openai's `tools`), which the client runs. Each was a ToolCall event before this.
    client_calls: tuple[ToolCall, ...] = ()
    # The turn ended waiting for a person: these calls need approval (their ToolCall events
    # came before), and `paused` is what a decision resumes (agents.runtime.approvals). The
    # run keeps `paused` on its row; it is no part of the stream (`stored: False`).
    approval_requests: tuple[ApprovalRequest, ...] = ()
    paused: PausedTurn | None = field(default=None, compare=False, metadata={"stored": False})

    def __post_init__(self) -> None:
        if self.answer is None:
            object.__setattr__(self, "answer", self._default_answer())

    def _default_answer(self) -> str | dict[str, Any]:
        if self.intervention is not None:
            return self.intervention.message
        if self.object_answer and self.structured is not None:
            return self.structured
        return self.text

    @property
    def answer_text(self) -> str:
        """The answer as message text: an object answer as its JSON."""
        answer = self.answer
        if isinstance(answer, dict):
            return json.dumps(answer, ensure_ascii=False)
        return answer or ""


@dataclass(frozen=True)
class ResponseFailed:
    code: FailureCode
    message: str
    usage: Usage = field(default_factory=Usage)


Event = ResponseCreated | TextDelta | ToolCall | ToolResult | ResponseCompleted | ResponseFailed
