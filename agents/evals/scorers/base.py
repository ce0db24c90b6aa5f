"""What a scorer reads and answers: the case's expectation, what the case's run did, and a
score from 0 to 1 that passes or not, with its reason.

Scorers read no table and call nothing but, for the judge, a model: they are pure, each in
its own module, so each is tested on its own and an experiment scores a run without a
query per scorer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

TrajectoryMode = Literal["exact", "in_order", "any_order"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExpectedCall:
    """A tool call a case expects: its name, and its arguments when it names them (then
    every argument named must be there with that value; others may be too)."""

    name: str
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Expected:
    """A case's `expected` (docs/api.md#datasets), as checked when the case was saved."""

    output: Any = None  # None: no expected output (a JSON null cannot be expected)
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    regex: str | None = None  # RE2 syntax, checked to compile
    output_schema: dict[str, Any] | None = None  # a checked JSON Schema
    tool_calls: tuple[ExpectedCall, ...] | None = None  # None: says nothing; (): none expected
    tool_calls_order: TrajectoryMode = "in_order"
    source_doc_ids: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Observed:
    """What a case's run did, read from its record."""

    answer: str  # its answer as text ("" when it failed); a structured output as JSON
    output: Any = None  # a structured output or a task's output, as JSON; else the text
    tool_calls: tuple[ToolCall, ...] = ()  # in the order the run made them
    source_doc_ids: tuple[str, ...] = ()  # a RAG answer's sources' documents, in its order
    latency_ms: int | None = None
    cost_usd: float | None = None  # None: unknown (its model has no price)
    failed: str | None = None  # why the run did not complete; every scorer then fails it
    input_text: str = ""  # the case's input as text, for a judge to read


@dataclass(frozen=True)
class Score:
    score: float  # 0 to 1
    passed: bool
    reason: str
    # The tokens a scorer spent itself (a judge's model call), as a run counts its own.
    usage: dict[str, int] | None = None

    def as_json(self) -> dict[str, Any]:
        scored: dict[str, Any] = {
            "score": round(self.score, 4),
            "passed": self.passed,
            "reason": self.reason,
        }
        if self.usage is not None:
            scored["usage"] = self.usage
        return scored


class Scorer(Protocol):
    """One scorer, with its options. Returns None when the case gives it nothing to check
    (`contains` on a case without `expected.contains`): it then counts neither way."""

    @property
    def name(self) -> str: ...

    def __call__(self, expected: Expected, observed: Observed) -> Score | None: ...


def failed_run(observed: Observed) -> Score | None:
    """The score of every scorer on a run that did not complete: 0, with its reason."""
    if observed.failed is None:
        return None
    return Score(0.0, False, f"the run did not complete: {observed.failed}")


def fraction(found: int, of: int, reason: str) -> Score:
    """A score counted over a case's expectations: passed only when all of them are met."""
    return Score(found / of if of else 1.0, found == of, reason)


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: 1 equals 1.0, but true is not 1 (as it is in Python)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```\Z", re.DOTALL)


def output_value(observed: Observed) -> tuple[bool, Any]:
    """The run's output as a JSON value: a structured output as it is; a text answer parsed
    as JSON (inside a Markdown code fence too, as models often write it). (False, the
    text) when the answer is not JSON."""
    if observed.output is not None and not isinstance(observed.output, str):
        return True, observed.output
    text = observed.answer.strip()
    fenced = _FENCE.match(text)
    try:
        return True, json.loads(fenced.group(1) if fenced else text)
    except (ValueError, RecursionError):  # not JSON, or nested past what a parser takes
        return False, observed.answer


def shown(value: Any, limit: int = 120) -> str:
    """A value quoted in a reason: JSON, cut to `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = json.dumps(text, ensure_ascii=False) if isinstance(value, str) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"
