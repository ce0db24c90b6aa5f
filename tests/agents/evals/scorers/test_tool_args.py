"""`tool_args`: expected calls' named arguments, each matched by its own call."""

from __future__ import annotations

import pytest

from agents.evals.scorers.base import Expected, ExpectedCall, Observed, Score, ToolCall
from agents.evals.scorers.tool_args import ToolArgs


def scored(want: list[ExpectedCall], made: list[ToolCall]) -> Score:
    score = ToolArgs()(Expected(tool_calls=tuple(want)), Observed("", tool_calls=tuple(made)))
    assert score is not None
    return score


def test_named_arguments_must_be_there_with_equal_values_others_may_be_too() -> None:
    want = [ExpectedCall("add", {"a": 1, "b": 2})]
    assert scored(want, [ToolCall("add", {"a": 1.0, "b": 2, "note": "x"})]).passed
    wrong = scored(want, [ToolCall("add", {"a": 1, "b": 3})])
    assert not wrong.passed
    assert wrong.reason == 'no call `add`({"a": 1, "b": 2}); made `add`({"a": 1, "b": 3})'


def test_json_equality_tells_true_from_one() -> None:
    assert not scored([ExpectedCall("f", {"x": 1})], [ToolCall("f", {"x": True})]).passed


def test_each_call_answers_one_expectation() -> None:
    want = [ExpectedCall("add", {"a": 1}), ExpectedCall("add", {"a": 1})]
    once = scored(want, [ToolCall("add", {"a": 1})])
    assert once.score == 0.5
    assert scored(want, [ToolCall("add", {"a": 1}), ToolCall("add", {"a": 1})]).passed


def test_the_matching_is_the_largest_whatever_the_order() -> None:
    # Greedy matching would give the first call to the looser expectation and fail.
    want = [ExpectedCall("f", {"x": 1}), ExpectedCall("f", {"x": 1, "y": 2})]
    made = [ToolCall("f", {"x": 1, "y": 2}), ToolCall("f", {"x": 1})]
    assert scored(want, made).passed


def test_the_score_is_the_share_matched() -> None:
    want = [ExpectedCall("a", {}), ExpectedCall("b", {"q": "x"}), ExpectedCall("c", {"n": 1})]
    score = scored(want, [ToolCall("a"), ToolCall("b", {"q": "x"})])
    assert score.score == pytest.approx(2 / 3)
    assert score.reason == 'no call `c`({"n": 1}); no `c` call made'


def test_calls_without_arguments_are_not_its_business() -> None:
    assert ToolArgs()(Expected(tool_calls=(ExpectedCall("a"),)), Observed("")) is None
    assert ToolArgs()(Expected(), Observed("")) is None
