"""`trajectory`: the tool calls' names in the three modes."""

from __future__ import annotations

import pytest

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.evals.scorers.base import (
    Expected,
    ExpectedCall,
    Observed,
    Score,
    ToolCall,
    TrajectoryMode,
)
from agents.evals.scorers.trajectory import Trajectory, TrajectoryOptions


def scored(
    want: list[str] | None,
    made: list[str],
    mode: TrajectoryMode | None = None,
    order: TrajectoryMode = "in_order",
) -> Score:
    calls = None if want is None else tuple(ExpectedCall(n) for n in want)
    expected = Expected(tool_calls=calls, tool_calls_order=order)
    score = Trajectory(mode=mode)(
        expected, Observed("", tool_calls=tuple(ToolCall(n) for n in made))
    )
    assert score is not None
    return score


def test_exact_needs_the_same_sequence() -> None:
    assert scored(["search", "fetch"], ["search", "fetch"], "exact").passed
    swapped = scored(["search", "fetch"], ["fetch", "search"], "exact")
    assert swapped.score == 0.0
    assert swapped.reason == "call 1: expected `search`, made `fetch`"
    extra = scored(["search"], ["search", "fetch"], "exact")
    assert extra.reason == "call 2: `fetch` made, none expected"
    short = scored(["search", "fetch"], ["search"], "exact")
    assert short.reason == "call 2: expected `fetch`, made none"


def test_in_order_allows_calls_between() -> None:
    assert scored(["search", "fetch"], ["search", "log", "fetch"], "in_order").passed


def test_in_order_scores_the_longest_subsequence() -> None:
    score = scored(["a", "b", "c"], ["b", "c", "a"], "in_order")
    assert score.score == pytest.approx(2 / 3)
    assert not score.passed
    assert score.reason.startswith("expected call 1 `a` not made in order (2 of 3 were)")


def test_any_order_counts_a_multiset() -> None:
    assert scored(["a", "b"], ["b", "x", "a"], "any_order").passed
    twice = scored(["add", "add", "sub"], ["sub", "add"], "any_order")
    assert twice.score == pytest.approx(2 / 3)
    assert twice.reason.startswith("`add` expected twice, made once")


def test_the_mode_defaults_to_the_case_s_order() -> None:
    assert scored(["a", "b"], ["b", "a"], order="any_order").passed
    assert not scored(["a", "b"], ["b", "a"], order="exact").passed
    assert scored(["a", "b"], ["b", "a"], mode="any_order", order="exact").passed


@pytest.mark.parametrize("mode", ["exact", "in_order", "any_order"])
def test_an_empty_expectation_wants_no_call_in_every_mode(mode: TrajectoryMode) -> None:
    assert scored([], [], mode).passed
    score = scored([], ["search"], mode)
    assert not score.passed
    assert score.reason == "expected no tool call; made `search`"


def test_no_call_made_scores_zero() -> None:
    score = scored(["a"], [], "in_order")
    assert score.score == 0.0
    assert "made none" in score.reason


def test_a_case_saying_nothing_of_tools_does_not_apply() -> None:
    assert Trajectory()(Expected(), Observed("", tool_calls=(ToolCall("a"),))) is None


def test_the_mode_option_is_one_of_three() -> None:
    assert parse(TrajectoryOptions, {"mode": "any_order"}).mode == "any_order"
    with pytest.raises(Invalid) as caught:
        parse(TrajectoryOptions, {"mode": "sorted"})
    assert caught.value.errors[0].loc == ("mode",)
