"""`contains`: every wanted substring present, every refused one absent."""

from __future__ import annotations

import pytest

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.evals.scorers.base import Expected, Observed
from agents.evals.scorers.contains import Contains, ContainsOptions

ANSWER = Observed(answer="The refund takes 5 days. Contact support.")


def test_all_present_passes() -> None:
    score = Contains()(Expected(contains=("refund", "5 days")), ANSWER)
    assert score is not None
    assert score.passed
    assert score.score == 1.0


def test_the_score_is_the_share_met_and_the_reason_names_the_missing() -> None:
    score = Contains()(Expected(contains=("refund", "7 days", "email")), ANSWER)
    assert score is not None
    assert not score.passed
    assert score.score == pytest.approx(1 / 3)
    assert score.reason == 'missing "7 days", "email"'


def test_not_contains_counts_with_contains() -> None:
    expected = Expected(contains=("refund",), not_contains=("support", "sorry"))
    score = Contains()(expected, ANSWER)
    assert score is not None
    assert score.score == pytest.approx(2 / 3)
    assert score.reason == 'contains what it must not: "support"'


def test_case_sensitive_unless_ignore_case() -> None:
    expected = Expected(contains=("REFUND",), not_contains=("CONTACT",))
    assert Contains()(expected, ANSWER).score == 0.5  # type: ignore[union-attr]
    assert Contains(ignore_case=True)(expected, ANSWER).score == 0.5  # type: ignore[union-attr]
    assert Contains(ignore_case=True)(Expected(contains=("REFUND",)), ANSWER).passed  # type: ignore[union-attr]


def test_an_empty_answer_misses_everything_but_passes_not_contains() -> None:
    assert not Contains()(Expected(contains=("x",)), Observed(answer="")).passed  # type: ignore[union-attr]
    assert Contains()(Expected(not_contains=("x",)), Observed(answer="")).passed  # type: ignore[union-attr]


def test_without_either_list_it_does_not_apply() -> None:
    assert Contains()(Expected(output="x"), ANSWER) is None


def test_long_lists_are_cut_in_the_reason() -> None:
    score = Contains()(Expected(contains=tuple(f"w{i}" for i in range(9))), ANSWER)
    assert score is not None
    assert score.reason.endswith("and 4 more")


def test_ignore_case_is_a_boolean() -> None:
    assert parse(ContainsOptions, {"ignoreCase": True}).ignore_case
    with pytest.raises(Invalid) as caught:
        parse(ContainsOptions, {"ignoreCase": "yes"})
    assert caught.value.errors[0].loc == ("ignoreCase",)
