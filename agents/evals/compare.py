"""Two experiments side by side, case by case (docs/api.md#experiments): what changed from
A to B, regressions first.

Cases are matched by their id: a case unchanged between two revisions keeps it, so two
experiments on different revisions compare on the cases they share (and list the others
on one side only). With repetitions, a side's pass rate over them decides: a case whose
pass rate fell from A to B is a regression, one whose rose an improvement, one whose
answers or scores differ is changed.

Two ways to the same rows: `experiments_compare` reads every case's details (three
queries, whatever the number of cases: the API answers every row); `compare_index`
classifies every case in one query and `compare_rows` reads the details of the cases a
page shows (the admin's page, bench/experiments.py).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from django.db import connection
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
    rows = compare_rows(a, b, None)
    rows.sort(key=lambda r: (ORDER[r.change], r.position))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.change] = counts.get(row.change, 0) + 1
    return Comparison(a, b, rows, counts)


def compare_rows(a: Experiment, b: Experiment, case_ids: Collection[uuid.UUID] | None) -> list[Row]:
    """The rows of `case_ids` (None: every case either ran), in no particular order."""
    sides_a, sides_b = _sides(a, case_ids), _sides(b, case_ids)
    found = set(sides_a) | set(sides_b)
    cases = {
        c["id"]: {**c, "input": _loads(c["input_text"]), "expected": _loads(c["expected_text"])}
        for c in DatasetCase.objects.filter(pk__in=found).values(
            "id", "position", input_text=_text("input"), expected_text=_text("expected")
        )
    }
    rows = []
    for case_id in found:
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
    return rows


@dataclass(frozen=True)
class Indexed:
    """A case of a comparison without its details: what a page needs to order, count and
    pick its rows."""

    case_id: uuid.UUID
    position: int
    change: Change


def compare_index(a: Experiment, b: Experiment) -> list[Indexed]:
    """Every case either experiment ran, classified as `experiments_compare` classifies it,
    in its order, by one query: no result's JSON leaves the database. A page then reads the
    details of its own rows alone (`compare_rows`): the admin's compare page of two
    1,000-case experiments decoded 3,000 JSON documents to show 100 rows
    (bench/experiments.py)."""
    with connection.cursor() as cursor:
        cursor.execute(_index_sql(), {"a": a.pk, "b": b.pk, "scored": ResultStatus.SCORED.value})
        found = [Indexed(case_id, position, change) for case_id, position, change in cursor]
    found.sort(key=lambda r: (ORDER[r.change], r.position))
    return found


@functools.cache
def _index_sql() -> str:
    results = connection.ops.quote_name(ExperimentResult._meta.db_table)
    side = f"""
        SELECT case_id, min(position) AS position,
            round(avg(passed::int), 4) AS rate,
            (array_agg(answer ORDER BY repetition))[1] AS answer,
            (array_agg(tool_calls ORDER BY repetition))[1] AS tool_calls,
            (array_agg(jsonb_path_query_array(scores, '$.*.score') ORDER BY repetition))[1]
                AS scores
        FROM {results} WHERE experiment_id = %({{}})s AND status = %(scored)s
        GROUP BY case_id
    """  # noqa: S608 (the table's name from the model; every value a parameter)
    # The order of _change's tests: a side missing, the pass rates, then any difference.
    return f"""
        WITH a AS ({side.format("a")}), b AS ({side.format("b")})
        SELECT coalesce(a.case_id, b.case_id), coalesce(a.position, b.position),
            CASE
                WHEN a.case_id IS NULL THEN 'only_b'
                WHEN b.case_id IS NULL THEN 'only_a'
                WHEN b.rate < a.rate THEN 'regression'
                WHEN b.rate > a.rate THEN 'improvement'
                WHEN a.answer <> b.answer OR a.tool_calls <> b.tool_calls
                    OR a.scores <> b.scores THEN 'changed'
                ELSE 'same'
            END
        FROM a FULL JOIN b ON a.case_id = b.case_id
    """  # noqa: S608


def _sides(experiment: Experiment, case_ids: Collection[uuid.UUID] | None) -> dict[uuid.UUID, Side]:
    scored = ExperimentResult.objects.filter(experiment=experiment, status=ResultStatus.SCORED)
    if case_ids is not None:
        scored = scored.filter(case_id__in=case_ids)
    results = scored.order_by("position", "repetition").values(
        "case_id",
        "answer",
        "passed",
        "run_id",
        "latency_ms",
        tool_calls_text=_text("tool_calls"),
        scores_text=_text("scores"),
        error_text=_text("error"),
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
