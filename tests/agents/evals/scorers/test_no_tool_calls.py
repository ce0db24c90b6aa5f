"""`no_tool_calls`: the run called nothing."""

from __future__ import annotations

from agents.evals.scorers.base import Expected, Observed, ToolCall
from agents.evals.scorers.no_tool_calls import NoToolCalls


def test_no_call_passes_on_any_case() -> None:
    score = NoToolCalls()(Expected(), Observed("Hi"))
    assert score is not None
    assert score.passed


def test_calls_fail_naming_them() -> None:
    score = NoToolCalls()(Expected(), Observed("", tool_calls=(ToolCall("a"), ToolCall("b"))))
    assert score is not None
    assert not score.passed
    assert score.score == 0.0
    assert score.reason == "2 tool calls: `a`, `b`"
