"""A run's steps as the admin's timeline: a bar per step, placed and sized by its time
within the run (the run steps of docs/api.md#run-steps, as GET /v1/runs/{id} answers them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from guardrails.engines.base import KIND_WORDS

# Shown in a step's details, in this order; the rest of a step is its bar and label.
DETAIL_KEYS = (
    "model",
    "tokensUsage",
    "timeToFirstTokenMs",
    "stopReason",
    "name",
    "stage",
    "action",
    "arguments",
    "result",
    "error",
    "query",
    "hxqlQuery",
    "hits",
    "tool",
    "decision",
    "by",
    "decidedAt",
    "message",
    "approvalRequestId",
)
MIN_WIDTH = 0.5  # percent: a step of a few microseconds still shows as a mark


@dataclass(frozen=True)
class Notice:
    """What a guardrail step found (its `detected`), in words."""

    headline: str  # "BLOCKED by HAIP-Profanity at the output stage"
    found: str  # the kind in words ("instruction override"), or "a block" where not told
    detector: str
    score: float
    matched: str | None  # the matched text, where the step has it
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Bar:
    kind: str
    label: str
    status: str
    latency_ms: int
    offset_ms: int
    left: float  # percent of the run's span
    width: float
    depth: int  # 1 for the steps of a nested task agent
    details: list[tuple[str, str]]
    notice: Notice | None = None  # a guardrail step's: what it found


def timeline(steps: list[dict[str, Any]], started_at: datetime, span_ms: int | None) -> list[Bar]:
    """The bars of `steps`, relative to the run's start; `span_ms` is the run's latency
    (None while it runs: the steps' own extent is used)."""
    starts = [_start_ms(step, started_at) for step in steps]
    ends = [
        start + int(step.get("latencyMs") or 0) for start, step in zip(starts, steps, strict=True)
    ]
    span = max([span_ms or 0, *ends, 1])
    return [
        Bar(
            kind=str(step.get("type", "")),
            label=_label(step),
            status=str(step.get("status", "")),
            latency_ms=int(step.get("latencyMs") or 0),
            offset_ms=start,
            left=round(100 * start / span, 2),
            width=round(max(MIN_WIDTH, 100 * int(step.get("latencyMs") or 0) / span), 2),
            depth=1 if step.get("parent") is not None else 0,
            details=[(key, shown(step[key])) for key in DETAIL_KEYS if key in step],
            notice=guardrail_notice(step),
        )
        for start, step in zip(starts, steps, strict=True)
    ]


def guardrail_notice(step: dict[str, Any]) -> Notice | None:
    """What a guardrail step found, or None for another step (or one without `detected`)."""
    detected = step.get("detected")
    if step.get("type") != "guardrail":
        return None
    if not isinstance(detected, dict):
        return None  # a step written before blocks said what they found
    kind = detected.get("kind")
    span = detected.get("span")
    if not isinstance(span, dict):
        span = {}
    return Notice(
        headline=f"{step.get('action', '')} by {step.get('name', '')} at the "
        f"{step.get('stage', '')} stage",
        found=KIND_WORDS.get(kind, str(kind)) if kind else "a block",
        detector=str(detected.get("detector") or ""),
        score=float(detected.get("score") or 0.0),
        matched=span.get("text"),
        start=span.get("start"),
        end=span.get("end"),
    )


def _start_ms(step: dict[str, Any], started_at: datetime) -> int:
    try:
        at = datetime.fromisoformat(str(step.get("startedAt")))
    except ValueError:
        return 0
    return max(0, int((at - started_at).total_seconds() * 1000))


def _label(step: dict[str, Any]) -> str:
    kind = step.get("type")
    if kind == "model_call":
        return f"model {step.get('model', '')}"
    if kind == "tool_call":
        return f"tool {step.get('name', '')}"
    if kind == "retrieval":
        return f"retrieval ({len(step.get('hits') or [])} hits)"
    if kind == "guardrail":
        return f"guardrail {step.get('name', '')} ({step.get('stage', '')})"
    if kind == "approval_request":
        return f"approval asked: {step.get('tool', '')}"
    if kind == "approval_decision":
        return f"{step.get('decision', '')} {step.get('tool', '')} by {step.get('by', '')}"
    return str(kind)


def shown(value: Any) -> str:
    """A value as the admin shows it: JSON indented, JSON text parsed first."""
    if isinstance(value, str):
        try:  # a tool's arguments and results are JSON text more often than not
            return json.dumps(json.loads(value), indent=2, ensure_ascii=False)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)
