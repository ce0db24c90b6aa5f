"""`exact`: strings without surrounding whitespace, other values as JSON."""

from __future__ import annotations

from agents.evals.scorers.base import Expected, Observed
from agents.evals.scorers.exact import Exact

exact = Exact()


def test_strings_compare_without_surrounding_whitespace() -> None:
    score = exact(Expected(output=" Paris\n"), Observed(answer="Paris  "))
    assert score is not None
    assert score.passed
    assert score.score == 1.0


def test_a_different_string_fails_naming_both() -> None:
    score = exact(Expected(output="Paris"), Observed(answer="paris"))
    assert score is not None
    assert not score.passed
    assert score.score == 0.0
    assert score.reason == 'expected "Paris", got "paris"'


def test_json_values_compare_as_json_whatever_their_spacing_or_key_order() -> None:
    want = Expected(output={"city": "Paris", "n": 1})
    assert exact(want, Observed(answer='{ "n": 1.0,  "city": "Paris" }')).passed  # type: ignore[union-attr]
    assert exact(want, Observed(answer="", output={"n": 1, "city": "Paris"})).passed  # type: ignore[union-attr]
    assert not exact(want, Observed(answer='{"n": true, "city": "Paris"}')).passed  # type: ignore[union-attr]


def test_an_answer_that_is_not_json_fails_a_json_expectation() -> None:
    score = exact(Expected(output=[1, 2]), Observed(answer="one, two"))
    assert score is not None
    assert not score.passed
    assert "not JSON" in score.reason


def test_a_number_expected_is_read_from_the_answer() -> None:
    assert exact(Expected(output=42), Observed(answer=" 42 ")).passed  # type: ignore[union-attr]


def test_an_empty_answer_fails_and_no_expected_output_does_not_apply() -> None:
    score = exact(Expected(output="yes"), Observed(answer=""))
    assert score is not None
    assert not score.passed
    assert exact(Expected(), Observed(answer="anything")) is None


def test_an_object_written_as_text_is_compared_as_json_too() -> None:
    score = exact(Expected(output='{"a": 1, "b": [true]}'), Observed(answer='{"b":[true],"a":1.0}'))
    assert score is not None
    assert score.passed
    different = exact(Expected(output='{"a": 1}'), Observed(answer='{"a": 2}'))
    assert different is not None
    assert not different.passed
    # A number written as text is text: "1.0" is not "1".
    assert not exact(Expected(output="1.0"), Observed(answer="1")).passed  # type: ignore[union-attr]
