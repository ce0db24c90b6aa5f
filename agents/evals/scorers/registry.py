"""The scorers by name: their options checked, and built from what was stored.

(The lead's first cut: `exact` alone, so experiments run end to end; the scorers' modules
replace it.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentbuilder.errors import Invalid, Loc
from agents.evals.scorers.base import Expected, Observed, Score, Scorer

SCORER_NAMES = ("exact",)


@dataclass(frozen=True)
class _Exact:
    name: str = "exact"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        if expected.output is None:
            return None
        want = expected.output if isinstance(expected.output, str) else json.dumps(expected.output)
        same = observed.answer.strip() == want.strip()
        return Score(1.0 if same else 0.0, same, "equal" if same else "differs")


def scorers_check(data: Any, *, loc: Loc) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not data:
        raise Invalid.at(loc, "a non-empty list of scorers")
    specs = []
    for i, item in enumerate(data):
        name = (
            item if isinstance(item, str) else item.get("name") if isinstance(item, dict) else None
        )
        if name not in SCORER_NAMES:
            raise Invalid.at((*loc, i), f"unknown scorer; known: {', '.join(SCORER_NAMES)}")
        specs.append({"name": name})
    return specs


def scorers_build(specs: list[dict[str, Any]]) -> list[Scorer]:
    return [_Exact() for _ in specs]
