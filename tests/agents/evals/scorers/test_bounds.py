"""`max_latency_ms` and `max_cost_usd`."""

from __future__ import annotations

import pytest

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.evals.scorers.base import Expected, Observed, Score
from agents.evals.scorers.bounds import (
    UNPRICED,
    MaxCostOptions,
    MaxCostUsd,
    MaxLatencyMs,
    MaxLatencyOptions,
)


def latency(limit: int, took: int | None) -> Score:
    score = MaxLatencyMs(limit)(Expected(), Observed("", latency_ms=took))
    assert score is not None
    return score


def cost(limit: float, spent: float | None) -> Score:
    score = MaxCostUsd(limit)(Expected(), Observed("", cost_usd=spent))
    assert score is not None
    return score


def test_latency_passes_at_or_under_its_bound() -> None:
    assert latency(1000, 1000).passed
    over = latency(1000, 1001)
    assert not over.passed
    assert over.score == 0.0
    assert over.reason == "1001 ms, over 1000 ms"
    assert not latency(1000, None).passed


def test_cost_passes_at_or_under_its_bound() -> None:
    assert cost(0.01, 0.01).passed
    assert cost(0, 0).passed
    assert not cost(0.01, 0.0101).passed


def test_an_unknown_cost_fails() -> None:
    score = cost(100, None)
    assert not score.passed
    assert score.reason == UNPRICED


@pytest.mark.parametrize("bad", [0, -5, 1.5, "100", True, None])
def test_a_latency_bound_is_a_positive_integer(bad: object) -> None:
    with pytest.raises(Invalid) as caught:
        parse(MaxLatencyOptions, {"max": bad})
    assert caught.value.errors[0].loc == ("max",)


@pytest.mark.parametrize("bad", [-0.01, "1", True, float("inf")])
def test_a_cost_bound_is_a_number_at_least_0(bad: object) -> None:
    with pytest.raises(Invalid) as caught:
        parse(MaxCostOptions, {"max": bad})
    assert caught.value.errors[0].loc == ("max",)


def test_a_bound_is_required() -> None:
    with pytest.raises(Invalid) as caught:
        parse(MaxCostOptions, {})
    assert caught.value.errors[0].loc == ("max",)
