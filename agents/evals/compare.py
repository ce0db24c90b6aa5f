"""Two experiments side by side, case by case (docs/api.md#experiments): what changed from
A to B, regressions first.

Cases are matched by their id: a case unchanged between two revisions keeps it, so two
experiments on different revisions compare on the cases they share (and list the others
on one side only). With repetitions, a side's pass rate over them decides: a case whose
pass rate fell from A to B is a regression, one whose rose an improvement, one whose
answers or scores differ is changed. Three queries, whatever the number of cases: the
compare page renders two 1,000-case experiments from it (bench/experiments.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from django.db.models import TextField
from django.db.models.functions import Cast

from agents.evals.cases import input_text
from agents.models import DatasetCase, Experiment, ExperimentResult, ResultStatus

Change = Literal["regression", "improvement", "changed", "same", "only_a", "only_b"]
ORDER: dict[str, int] = {
    "regression": 0,
    "improvement": 1,
    "changed": 2,
    "only_a": 3,
    "only_b": 3,
    "same": 4,
}


@dataclass(frozen=True)
class Side:
    """One experiment's runs of one case (its first repetition's answer shown)."""

    answer: str
    tool_calls: list[dict[str, Any]]
    scores: dict[str, Any]
    passed: bool | None
    pass_rate: float | None  # over its repetitions
    run_id: str | None
    latency_ms: int | None
    error: Any = None

    def as_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "toolCalls": self.tool_calls,
            "scores": self.scores,
            "passed": self.passed,
            "passRate": self.pass_rate,
            "runId": self.run_id,
            "latencyMs": self.latency_ms,
            "error": self.error,
        }


@dataclass(frozen=True)
class Row:
    case_id: str
    position: int
    input: str
    expected: Any
    a: Side | None
    b: Side | None
    change: Change

    def as_json(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "position": self.position,
            "input": self.input,
            "expected": self.expected,
            "a": None if self.a is None else self.a.as_json(),
            "b": None if self.b is None else self.b.as_json(),
            "change": self.change,
        }


@dataclass(frozen=True)
class Comparison:
    a: Experiment
    b: Experiment
    rows: list[Row]
    counts: dict[str, int] = field(default_factory=dict)


def experiments_compare(a: Experiment, b: Experiment) -> Comparison:
    """A and B per case, regressions first, then improvements, changes, the cases of one
    side only and the unchanged; each group in the dataset's order."""
    sides_a, sides_b = _sides(a), _sides(b)
    case_ids = set(sides_a) | set(sides_b)
    cases = {
        c["id"]: {**c, "input": _loads(c["input_text"]), "expected": _loads(c["expected_text"])}
        for c in DatasetCase.objects.filter(pk__in=case_ids).values(
            "id", "position", input_text=_text("input"), expected_text=_text("expected")
        )
    }
    rows = []
    for case_id in case_ids:
        case = cases[case_id]
        side_a, side_b = sides_a.get(case_id), sides_b.get(case_id)
        rows.append(
            Row(
                case_id=str(case_id),
                position=case["position"],
                input=input_text(case["input"]),
                expected=case["expected"],
                a=side_a,
                b=side_b,
                change=_change(side_a, side_b),
            )
        )
    rows.sort(key=lambda r: (ORDER[r.change], r.position))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.change] = counts.get(row.change, 0) + 1
    return Comparison(a, b, rows, counts)


def _sides(experiment: Experiment) -> dict[uuid.UUID, Side]:
    results = (
        ExperimentResult.objects.filter(experiment=experiment, status=ResultStatus.SCORED)
        .order_by("position", "repetition")
        .values(
            "case_id",
            "answer",
            "passed",
            "run_id",
            "latency_ms",
            tool_calls_text=_text("tool_calls"),
            scores_text=_text("scores"),
            error_text=_text("error"),
        )
    )
    grouped: dict[uuid.UUID, list[Any]] = {}
    for result in results:
        grouped.setdefault(result["case_id"], []).append(result)
    sides = {}
    for case_id, reps in grouped.items():
        first = reps[0]
        decided = [r["passed"] for r in reps if r["passed"] is not None]
        sides[case_id] = Side(
            answer=first["answer"],
            tool_calls=_loads(first["tool_calls_text"]),
            scores=_loads(first["scores_text"]),
            passed=first["passed"],
            pass_rate=round(sum(decided) / len(decided), 4) if decided else None,
            run_id=None if first["run_id"] is None else str(first["run_id"]),
            latency_ms=first["latency_ms"],
            error=_loads(first["error_text"]),
        )
    return sides


def _text(column: str) -> Cast:
    """A JSON column as its text: decoded here by orjson, which the page's profile showed
    worth it (Django's decoding of every result's JSON was 45 % of the compare page's CPU,
    bench/experiments.py)."""
    return Cast(column, TextField())


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _change(a: Side | None, b: Side | None) -> Change:
    if a is None:
        return "only_b"
    if b is None:
        return "only_a"
    if a.pass_rate is not None and b.pass_rate is not None:
        if b.pass_rate < a.pass_rate:
            return "regression"
        if b.pass_rate > a.pass_rate:
            return "improvement"
    differs = a.answer != b.answer or a.tool_calls != b.tool_calls
    differs = differs or _values(a.scores) != _values(b.scores)
    return "changed" if differs else "same"


def _values(scores: dict[str, Any]) -> dict[str, Any]:
    return {name: s.get("score") for name, s in scores.items()}
