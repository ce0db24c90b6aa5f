"""A run's events as MCP: text deltas as progress, the last event as a CallToolResult."""

from __future__ import annotations

import uuid
from typing import Any

from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)

from agentbuilder.errors import Invalid
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed, TextDelta
from agents.runtime.failures import FailureCode

# `_meta` keys of a result: prefixed, as the specification asks of implementation keys.
META = "agentbuilder/"


class ResultEncoder:
    """One call's run: `progress` for each event, `result` for the one that ended it."""

    def __init__(
        self, run_id: uuid.UUID, answered_by: str, thread_id: str, elicit: bool = False
    ) -> None:
        # Whether a turn that waits asks the client's user itself (the 2026 protocol's
        # input-required result) rather than naming what waits.
        self.elicit = elicit
        self.meta: dict[str, Any] = {f"{META}runId": str(run_id), f"{META}answeredBy": answered_by}
        if thread_id:
            self.meta[f"{META}threadId"] = thread_id
        self.streamed = 0

    def progress(self, event: Event) -> tuple[float, str] | None:
        """(progress, message) to notify for `event`, or None. Progress counts the
        characters streamed so far: it must grow with every notification."""
        if not isinstance(event, TextDelta) or not event.text:
            return None
        self.streamed += len(event.text)
        return float(self.streamed), event.text

    def result(self, last: Event | None) -> CallToolResult | InputRequiredResult:
        if isinstance(last, ResponseCompleted):
            return self._completed(last)
        if isinstance(last, ResponseFailed):
            return failed_result(last.code, last.message, self.meta)
        # recorded_events ends every stream with one of the two; this is a bug guard.
        return failed_result(
            FailureCode.INTERNAL_ERROR, "the run ended without an answer", self.meta
        )

    def _completed(self, event: ResponseCompleted) -> CallToolResult | InputRequiredResult:
        if event.approval_requests:
            waiting = [
                (r.approval_request_id, r.name, r.arguments) for r in event.approval_requests
            ]
            if self.elicit:
                return input_required_result(self.meta, waiting)
            return awaiting_result(self.meta, waiting)
        meta = dict(self.meta)
        outputs = event.custom_outputs
        if event.intervention is not None:
            outputs = {**outputs, **event.intervention.custom_outputs()}
        if outputs:
            meta[f"{META}customOutputs"] = outputs
        answer = event.answer_text
        structured: dict[str, Any] | None = None
        if isinstance(event.answer, dict):
            structured = event.answer
        elif event.structured is not None and event.intervention is None:
            structured = event.structured
        elif "sourceNodes" in event.custom_outputs:
            structured = {"answer": answer, "sources": event.custom_outputs["sourceNodes"]}
        return CallToolResult(
            content=[TextContent(text=answer)],
            structured_content=structured,
            _meta=meta,
        )


def failed_result(
    code: FailureCode, message: str, meta: dict[str, Any] | None = None
) -> CallToolResult:
    """A run that failed, or a call refused before it ran: an error the calling model reads."""
    return CallToolResult(
        content=[TextContent(text=f"The agent failed ({code}): {message}")],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
        _meta=meta,
    )


def invalid_result(exc: Invalid, run_id: uuid.UUID | None = None) -> CallToolResult:
    """Arguments that do not fit: each problem with the path of its field."""
    problems = [f"{'.'.join(str(part) for part in item.loc)}: {item.msg}" for item in exc.errors]
    return CallToolResult(
        content=[TextContent(text="Invalid arguments: " + "; ".join(problems))],
        structured_content={
            "error": {
                "code": "invalid_request",
                "message": "the arguments do not fit the tool's input schema",
                "details": [item.as_dict() for item in exc.errors],
            }
        },
        is_error=True,
        _meta=run_meta(run_id),
    )


def run_meta(run_id: uuid.UUID | None) -> dict[str, Any] | None:
    """The `_meta` of a call refused after its run opened (and was closed `failed`)."""
    return {f"{META}runId": str(run_id)} if run_id is not None else None


def awaiting_result(meta: dict[str, Any], waiting: list[tuple[str, str, str]]) -> CallToolResult:
    """A turn that waits for a person (docs/api.md#mcp): not an error; what waits, in words
    a calling model can act on and as data, and how to answer."""
    run_id = meta[f"{META}runId"]
    calls = "; ".join(f"{name}({arguments})" for _, name, arguments in waiting)
    said = (
        f"The agent waits for a person to approve before it calls {calls}. When they have "
        f'decided, call this tool again with {{"approvals": {{"runId": "{run_id}", '
        '"decisions": [{"approvalRequestId": …, "decision": "approve" | "reject"}]}} to '
        "go on."
    )
    requests = [
        {"approvalRequestId": request_id, "name": name, "arguments": arguments}
        for request_id, name, arguments in waiting
    ]
    return CallToolResult(
        content=[TextContent(text=said)],
        structured_content={
            "status": "awaiting_approval",
            "runId": run_id,
            "approvalRequests": requests,
        },
        _meta=meta,
    )


def waiting_result(run_id: uuid.UUID, pending: tuple[uuid.UUID, ...]) -> CallToolResult:
    """Decided in part: the run waits for the rest."""
    rest = ", ".join(str(p) for p in pending)
    return CallToolResult(
        content=[TextContent(text=f"Recorded. The run still waits for decisions on: {rest}.")],
        structured_content={
            "status": "awaiting_approval",
            "runId": str(run_id),
            "pendingApprovalRequests": [str(p) for p in pending],
        },
        _meta={f"{META}runId": str(run_id)},
    )


# The form each waiting call asks the client's user to fill (flat, as elicitation forms are).
DECISION_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "reject"],
            "description": "approve: the call runs; reject: it does not, and the agent is told.",
        },
        "message": {
            "type": "string",
            "title": "Message",
            "maxLength": 4000,
            "description": "Optional: what the agent reads with the decision.",
        },
    },
    "required": ["decision"],
}


def input_required_result(
    meta: dict[str, Any], waiting: list[tuple[str, str, str]]
) -> InputRequiredResult:
    """A turn that waits, for a client that elicits (docs/api.md#mcp): one form per waiting
    call, keyed by its approval request's id, which the client's retry answers under the
    same key. No requestState: the ids name the run, and the decision is checked as any."""
    requests: dict[str, Any] = {
        request_id: ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"The agent asks to call {name}({arguments}). Approve or reject it.",
                requested_schema=DECISION_FORM,
            )
        )
        for request_id, name, arguments in waiting
    }
    return InputRequiredResult(input_requests=requests, _meta=meta)
