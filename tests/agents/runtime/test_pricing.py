"""What a model call and a run cost (docs/api.md#cost): prices applied to usage, cached input
at its own price, unknown never taken for free."""

from __future__ import annotations

import pytest

from agents.llm.base import Usage
from agents.runtime.pricing import Price, cost_usd, steps_cost

HAIKU = Price(input=0.25, output=1.25)
MINI = Price(input=0.15, output=0.6, cached_input=0.075)


def test_a_call_costs_its_tokens_at_the_price_per_million() -> None:
    assert cost_usd(Usage(1_000_000, 0), HAIKU) == pytest.approx(0.25)
    assert cost_usd(Usage(2000, 400), HAIKU) == pytest.approx(2000 * 0.25e-6 + 400 * 1.25e-6)


def test_cached_input_costs_the_cached_price_and_the_rest_the_input_price() -> None:
    usage = Usage(input_tokens=10_000, output_tokens=100, cached_input_tokens=8_000)
    expected = (2_000 * 0.15 + 8_000 * 0.075 + 100 * 0.6) / 1e6
    assert cost_usd(usage, MINI) == pytest.approx(expected)
    # A model whose cache reads are not billed apart: input price for all of them.
    assert cost_usd(usage, HAIKU) == cost_usd(Usage(10_000, 100), HAIKU)


def test_a_model_without_a_price_costs_nothing_known() -> None:
    assert cost_usd(Usage(10, 2), None) is None
    assert cost_usd(Usage(10, 2), Price(0, 0)) == 0


def step(model: str, usage: Usage, cost: float | None) -> dict[str, object]:
    return {"type": "model_call", "model": model, "tokensUsage": usage.as_dict(), "costUsd": cost}


def test_a_runs_cost_is_its_model_calls_with_their_usage_by_model() -> None:
    steps = [
        step("a", Usage(100, 10, 40), 0.5),
        {"type": "tool_call", "name": "multiply"},
        step("b", Usage(5, 1), 0.25),
        step("a", Usage(50, 5), 0.125),
    ]
    total, by_model = steps_cost(steps)
    assert total == pytest.approx(0.875)
    assert by_model == {
        "a": {
            "input_tokens": 150,
            "output_tokens": 15,
            "cached_input_tokens": 40,
            "cost_usd": pytest.approx(0.625),
        },
        "b": {"input_tokens": 5, "output_tokens": 1, "cached_input_tokens": 0, "cost_usd": 0.25},
    }


def test_one_unpriced_call_that_used_tokens_leaves_the_run_without_a_cost() -> None:
    total, by_model = steps_cost([step("a", Usage(10, 1), 0.5), step("free?", Usage(10, 1), None)])
    assert total is None
    assert by_model["a"]["cost_usd"] == 0.5
    assert by_model["free?"]["cost_usd"] is None


def test_an_unpriced_call_that_used_nothing_costs_nothing() -> None:
    # A failed attempt on a model without a price, before any token: the run's cost holds.
    total, _ = steps_cost([step("gone", Usage(), None), step("a", Usage(10, 1), 0.5)])
    assert total == 0.5
    assert steps_cost([]) == (0.0, {})
