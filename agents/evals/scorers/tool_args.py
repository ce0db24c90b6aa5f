"""`tool_args`: each expected call that names `arguments` was made with them: some call of
that name has every argument named, with an equal value (as JSON: 1 equals 1.0); other
arguments may be there too. Each made call answers one expected call, so two expected
`add` calls need two calls. Score: the share of such expected calls made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.evals.scorers.base import (
    Expected,
    ExpectedCall,
    Observed,
    Score,
    ToolCall,
    fraction,
    json_equal,
    shown,
)


@dataclass(frozen=True)
class ToolArgs:
    name: str = "tool_args"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        want = [c for c in expected.tool_calls or () if c.arguments is not None]
        if not want:
            return None
        made = observed.tool_calls
        fits = [[j for j, call in enumerate(made) if _fits(w, call)] for w in want]
        matched = _matching(fits)
        missed = next((i for i in range(len(want)) if i not in matched), None)
        if missed is None:
            return fraction(
                len(want), len(want), f"all {len(want)} calls made with their arguments"
            )
        call = want[missed]
        assert call.arguments is not None
        same_name = [c for c in made if c.name == call.name]
        seen = (
            "; made " + ", ".join(_call(c.name, c.arguments) for c in same_name[:3])
            if same_name
            else f"; no `{call.name}` call made"
        )
        reason = f"no call {_call(call.name, call.arguments)}{seen}"
        return fraction(len(matched), len(want), reason)


def _fits(want: ExpectedCall, call: ToolCall) -> bool:
    arguments = want.arguments or {}
    return call.name == want.name and all(
        key in call.arguments and json_equal(call.arguments[key], value)
        for key, value in arguments.items()
    )


def _matching(fits: list[list[int]]) -> dict[int, int]:
    """A largest matching of expected calls to made calls (Kuhn's augmenting paths): an
    expected call that only one made call fits gets it, whatever the order."""
    owner: dict[int, int] = {}  # made call → expected call

    def assign(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or assign(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(fits)):
        assign(i, set())
    return {i: j for j, i in owner.items()}


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f"`{name}`({shown(arguments, 100)})"
