"""`no_tool_calls`: the run answered without calling a tool (a question the agent should
answer itself, or refuse). It applies to every case."""

from __future__ import annotations

from dataclasses import dataclass

from agents.evals.scorers.base import Expected, Observed, Score


@dataclass(frozen=True)
class NoToolCalls:
    name: str = "no_tool_calls"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        if not observed.tool_calls:
            return Score(1.0, True, "no tool call")
        names = ", ".join(f"`{c.name}`" for c in observed.tool_calls[:10])
        count = len(observed.tool_calls)
        return Score(0.0, False, f"{count} tool call{'s' if count > 1 else ''}: {names}")
