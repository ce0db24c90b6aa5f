"""The playground's NDJSON: a line per event, tool results included (the native stream
leaves them out), and a last line with the answer, its sources or the guardrail that
replaced it, the tokens and the latency; or, when the turn waits for approvals, the calls
that wait (docs/api.md#tool-approvals)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, assert_never

from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class PlaygroundEncoder:
    """`titles` maps a document id to its title, for the sources of a RAG answer."""

    def __init__(
        self, run_id: uuid.UUID, answered_by: str, thread_id: str, *, draft: bool = False
    ) -> None:
        self.run_id = str(run_id)
        self.answered_by = answered_by
        self.thread_id = thread_id
        self.draft = draft  # an unsaved config answers ("Try without saving")
        self.titles: dict[str, str] = {}
        self._start = time.monotonic()

    def frames(self, event: Event) -> list[bytes]:
        return [_line(self.encode(event))]

    def encode(self, event: Event) -> dict[str, Any]:
        if isinstance(event, ResponseCreated):
            return {
                "type": "created",
                "runId": self.run_id,
                "model": event.model,
                "answeredBy": self.answered_by,
                "threadId": self.thread_id,
                "draft": self.draft,
            }
        if isinstance(event, TextDelta):
            return {"type": "delta", "text": event.text}
        if isinstance(event, ToolCall):
            return {
                "type": "tool_call",
                "callId": event.call_id,
                "name": event.name,
                "arguments": event.arguments,
            }
        if isinstance(event, ToolResult):
            return {
                "type": "tool_result",
                "callId": event.call_id,
                "name": event.name,
                "content": event.content,
                "isError": event.is_error,
            }
        if isinstance(event, ResponseCompleted):
            if event.approval_requests:  # the turn waits: the page asks for the decisions
                return {
                    "type": "approval_requested",
                    "text": event.answer_text,
                    "approvalRequests": [
                        {
                            "approvalRequestId": r.approval_request_id,
                            "callId": r.call_id,
                            "name": r.name,
                            "arguments": r.arguments,
                        }
                        for r in event.approval_requests
                    ],
                    **self._measured(event),
                }
            return {"type": "completed", **self._completed(event), **self._measured(event)}
        if isinstance(event, ResponseFailed):
            return {
                "type": "failed",
                "code": event.code,
                "message": event.message,
                **self._measured(event),
            }
        assert_never(event)

    def _completed(self, event: ResponseCompleted) -> dict[str, Any]:
        outputs = event.custom_outputs
        intervention = event.intervention
        return {
            "answer": event.answer_text,
            "structured": event.structured,
            "sources": [self._source(node) for node in outputs.get("sourceNodes", ())],
            "guardrail": intervention.custom_outputs()["guardrail"] if intervention else None,
            "hallucinationCheck": outputs.get("hallucinationCheck"),
        }

    def _source(self, node: dict[str, Any]) -> dict[str, Any]:
        return {**node, "title": self.titles.get(node["docId"], "")}

    def _measured(self, event: ResponseCompleted | ResponseFailed) -> dict[str, Any]:
        return {
            "usage": event.usage.as_dict(),
            "latencyMs": int((time.monotonic() - self._start) * 1000),
        }
