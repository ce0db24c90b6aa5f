"""What a model call costs: the catalog's prices (US dollars per million tokens) applied to
the usage a provider reported (docs/api.md#cost). Plain arithmetic, so that the runtime
prices each call as it ends without asking the database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.llm.base import Usage

MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `cached_input` None: cache reads cost the input price (a
    model whose provider bills them apart has its price in the catalog)."""

    input: float
    output: float
    cached_input: float | None = None


def cost_usd(usage: Usage, price: Price | None) -> float | None:
    """The call's cost in USD; None when the model has no price (unknown is not free)."""
    if price is None:
        return None
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    dollars = (
        (usage.input_tokens - cached) * price.input
        + cached * cached_price
        + usage.output_tokens * price.output
    ) / MILLION
    return round(dollars, 10)


ByModel = dict[str, dict[str, Any]]  # model: {input_tokens, output_tokens, …, cost_usd}


def steps_cost(steps: Iterable[Mapping[str, Any]]) -> tuple[float | None, ByModel]:
    """A run's cost and its usage by model, from its recorded steps (docs/api.md#run-steps):
    every model call, nested task agents' included. The cost is None when a call that used
    tokens had no price; a run that called no model cost nothing."""
    total: float | None = 0.0
    by_model: ByModel = {}
    for step in steps:
        if step.get("type") != "model_call":
            continue
        usage = step.get("tokensUsage") or {}
        cost = step.get("costUsd")
        if step.get("status") == "failed" and not any(usage.values()):
            continue  # a fallen-back attempt: that model answered nothing, used nothing
        row = by_model.setdefault(
            step["model"],
            {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "cost_usd": 0.0},
        )
        for key in ("input_tokens", "output_tokens", "cached_input_tokens"):
            row[key] += usage.get(key, 0)
        if cost is None and (usage.get("input_tokens") or usage.get("output_tokens")):
            row["cost_usd"] = total = None
        elif cost is not None:
            if row["cost_usd"] is not None:
                row["cost_usd"] = round(row["cost_usd"] + cost, 10)
            if total is not None:
                total = round(total + cost, 10)
    return total, by_model
