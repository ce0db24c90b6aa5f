"""What scorers share: JSON equality, the output as a JSON value, a score's JSON."""

from __future__ import annotations

from agents.evals.scorers.base import Observed, Score, json_equal, output_value, shown


def test_json_equal_is_json_s_equality_not_python_s() -> None:
    assert json_equal(1, 1.0)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal("1", 1)


def test_output_value_prefers_a_structured_output_then_parses_the_answer() -> None:
    assert output_value(Observed(answer='{"a": 1}', output={"a": 1})) == (True, {"a": 1})
    assert output_value(Observed(answer=" [1, 2] ")) == (True, [1, 2])
    assert output_value(Observed(answer='```json\n{"a": 2}\n```')) == (True, {"a": 2})
    assert output_value(Observed(answer="not json")) == (False, "not json")
    assert output_value(Observed(answer="[" * 100_000)) == (False, "[" * 100_000)


def test_a_score_s_json_has_its_usage_only_when_it_spent_tokens() -> None:
    assert Score(0.123456, True, "ok").as_json() == {
        "score": 0.1235,
        "passed": True,
        "reason": "ok",
    }
    usage = {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    assert Score(1.0, True, "ok", usage).as_json()["usage"] == usage


def test_shown_quotes_and_cuts() -> None:
    assert shown("hi") == '"hi"'
    assert shown({"a": 1}) == '{"a": 1}'
    assert len(shown("x" * 500, 50)) == 50
