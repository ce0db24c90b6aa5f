"""`regex`: an RE2 search in the answer."""

from __future__ import annotations

from agents.evals.scorers.base import Expected, Observed
from agents.evals.scorers.regex import Regex

regex = Regex()


def test_a_search_anywhere_in_the_answer_passes() -> None:
    score = regex(Expected(regex=r"\d+ days"), Observed(answer="It takes 5 days."))
    assert score is not None
    assert score.passed
    assert score.reason == 'matched "5 days" at 9'


def test_no_match_fails() -> None:
    score = regex(Expected(regex=r"^\d+$"), Observed(answer="five"))
    assert score is not None
    assert not score.passed
    assert score.score == 0.0
    assert score.reason == 'no match for "^\\\\d+$"'


def test_a_pattern_that_would_backtrack_runs_in_linear_time() -> None:
    # (a+)+$ on "aaaa…b" takes exponential time in a backtracking engine; RE2 answers at once
    # (no clock: a backtracking engine would not finish this test at all).
    score = regex(Expected(regex=r"(a+)+$"), Observed(answer="a" * 50_000 + "b"))
    assert score is not None
    assert not score.passed


def test_a_pattern_that_does_not_compile_fails_the_case_without_raising() -> None:
    score = regex(Expected(regex="(unclosed"), Observed(answer="(unclosed"))
    assert score is not None
    assert not score.passed
    assert score.reason.startswith("the case's regex does not compile (RE2): missing )")


def test_an_empty_answer_and_no_regex() -> None:
    assert not regex(Expected(regex="x"), Observed(answer="")).passed  # type: ignore[union-attr]
    assert regex(Expected(regex="^$"), Observed(answer="")).passed  # type: ignore[union-attr]
    assert regex(Expected(), Observed(answer="x")) is None
