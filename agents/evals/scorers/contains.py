"""`contains`: the answer has every `expected.contains` substring and none of the
`expected.notContains` ones.

One scorer reads both lists, since both are the case's words about the answer's text:
its score is the fraction of them met (each wanted substring present, each refused one
absent). Case-sensitive unless `ignoreCase` (promptfoo's `icontains`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import StrictBool

from agentbuilder.wire import CamelModel
from agents.evals.scorers.base import Expected, Observed, Score, fraction, shown

LISTED = 5  # substrings named in a reason


class ContainsOptions(CamelModel):
    ignore_case: StrictBool = False


@dataclass(frozen=True)
class Contains:
    name: str = "contains"
    ignore_case: bool = False

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        checks = len(expected.contains) + len(expected.not_contains)
        if not checks:
            return None
        answer = self._folded(observed.answer)
        missing = [s for s in expected.contains if self._folded(s) not in answer]
        present = [s for s in expected.not_contains if self._folded(s) in answer]
        reasons = []
        if missing:
            reasons.append(f"missing {_listed(missing)}")
        if present:
            reasons.append(f"contains what it must not: {_listed(present)}")
        met = checks - len(missing) - len(present)
        return fraction(met, checks, "; ".join(reasons) or f"all {checks} met")

    def _folded(self, text: str) -> str:
        return text.casefold() if self.ignore_case else text


def _listed(texts: list[str]) -> str:
    named = ", ".join(shown(t, 60) for t in texts[:LISTED])
    return named + (f" and {len(texts) - LISTED} more" if len(texts) > LISTED else "")
