"""`max_latency_ms` and `max_cost_usd`: the run took at most `max` milliseconds, or cost
at most `max` US dollars. Score 1 or 0, so a mean is the share of cases within the bound.

A run whose model has no price in the catalog has no cost: `max_cost_usd` fails it, with
that reason, rather than passing what it cannot measure (a gate on cost must not open
because the prices were never entered).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from agentbuilder.wire import CamelModel
from agents.evals.scorers.base import Expected, Observed, Score

UNPRICED = "the run's cost is unknown: its model has no price"


class MaxLatencyOptions(CamelModel):
    max: int = Field(gt=0, strict=True)


class MaxCostOptions(CamelModel):
    max: float = Field(ge=0, strict=True, allow_inf_nan=False)


@dataclass(frozen=True)
class MaxLatencyMs:
    max: int
    name: str = "max_latency_ms"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        took = observed.latency_ms
        if took is None:
            return Score(0.0, False, "the run's latency is unknown")
        within = took <= self.max
        return Score(
            float(within), within, f"{took} ms, {'within' if within else 'over'} {self.max} ms"
        )


@dataclass(frozen=True)
class MaxCostUsd:
    max: float
    name: str = "max_cost_usd"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        cost = observed.cost_usd
        if cost is None:
            return Score(0.0, False, UNPRICED)
        within = cost <= self.max
        return Score(
            float(within), within, f"${cost:.6g}, {'within' if within else 'over'} ${self.max:g}"
        )
