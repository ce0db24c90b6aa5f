"""`trajectory`: the run called the tools `expected.toolCalls` names (by name; their
arguments are `tool_args`'), in the way `mode` says, else as the case's `toolCallsOrder`.

- `exact`: the same calls in the same order, no other; score 1 or 0.
- `in_order`: the expected calls in their order, other calls allowed between them; score
  the share of expected calls found in order (their longest common subsequence).
- `any_order`: every expected call made, in any order (twice expected, twice made);
  score the share made.

`toolCalls: []` expects no call, in every mode. Passed only at 1.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from agentbuilder.wire import CamelModel
from agents.evals.scorers.base import (
    Expected,
    Observed,
    Score,
    TrajectoryMode,
    fraction,
)


class TrajectoryOptions(CamelModel):
    mode: TrajectoryMode | None = None  # None: each case's `toolCallsOrder`


@dataclass(frozen=True)
class Trajectory:
    name: str = "trajectory"
    mode: TrajectoryMode | None = None

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        if expected.tool_calls is None:
            return None
        want = [c.name for c in expected.tool_calls]
        made = [c.name for c in observed.tool_calls]
        if not want:
            if not made:
                return Score(1.0, True, "no tool call, as expected")
            return Score(0.0, False, f"expected no tool call; made {_names(made)}")
        mode = self.mode or expected.tool_calls_order
        if mode == "exact":
            return _exact(want, made)
        if mode == "in_order":
            return _in_order(want, made)
        return _any_order(want, made)


def _exact(want: list[str], made: list[str]) -> Score:
    if want == made:
        return Score(1.0, True, f"made exactly {_names(want)}")
    for i, (w, m) in enumerate(zip(want, made, strict=False)):
        if w != m:
            return Score(0.0, False, f"call {i + 1}: expected `{w}`, made `{m}`")
    if len(made) < len(want):
        return Score(0.0, False, f"call {len(made) + 1}: expected `{want[len(made)]}`, made none")
    return Score(0.0, False, f"call {len(want) + 1}: `{made[len(want)]}` made, none expected")


def _in_order(want: list[str], made: list[str]) -> Score:
    matched = _subsequence(want, made)
    missed = next((i for i in range(len(want)) if i not in matched), None)
    if missed is None:
        return fraction(len(want), len(want), f"made {_names(want)} in order")
    reason = (
        f"expected call {missed + 1} `{want[missed]}` not made in order "
        f"({len(matched)} of {len(want)} were); made {_names(made)}"
    )
    return fraction(len(matched), len(want), reason)


def _subsequence(want: list[str], made: list[str]) -> set[int]:
    """The indexes of `want` in a longest common subsequence with `made`."""
    rows, cols = len(want), len(made)
    best = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if want[i] == made[j]:
                best[i][j] = best[i + 1][j + 1] + 1
            else:
                best[i][j] = max(best[i + 1][j], best[i][j + 1])
    matched, i, j = set(), 0, 0
    while i < rows and j < cols:
        if want[i] == made[j]:
            matched.add(i)
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return matched


def _any_order(want: list[str], made: list[str]) -> Score:
    left = Counter(made)
    missing = []
    for name in want:
        if left[name]:
            left[name] -= 1
        else:
            missing.append(name)
    if not missing:
        return fraction(len(want), len(want), f"made {_names(want)}")
    counts = Counter(missing)
    first = missing[0]
    wanted = want.count(first)
    reason = (
        f"`{first}` expected {_times(wanted)}, made {_times(wanted - counts[first])}; "
        f"made {_names(made)}"
    )
    return fraction(len(want) - len(missing), len(want), reason)


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


def _names(names: list[str], limit: int = 10) -> str:
    if not names:
        return "none"
    listed = ", ".join(f"`{n}`" for n in names[:limit])
    return listed + (f" and {len(names) - limit} more" if len(names) > limit else "")
