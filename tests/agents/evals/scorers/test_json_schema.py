"""`json_schema`: the output, as JSON, valid against the case's schema."""

from __future__ import annotations

from typing import Any

from agents.evals.scorers.base import Expected, Observed, Score
from agents.evals.scorers.json_schema import JsonSchema

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


def scored(schema: dict[str, Any], observed: Observed) -> Score:
    score = JsonSchema()(Expected(output_schema=schema), observed)
    assert score is not None
    return score


def test_a_valid_answer_passes() -> None:
    assert scored(PERSON, Observed(answer='{"name": "Ada", "age": 36}')).passed
    assert scored(PERSON, Observed(answer="", output={"name": "Ada", "age": 36})).passed


def test_violations_are_listed_with_their_paths() -> None:
    score = scored(PERSON, Observed(answer='{"age": -1}'))
    assert not score.passed
    assert score.score == 0.0
    assert score.reason.startswith("2 violations: at $: 'name' is a required property; ")
    assert "at $.age: -1 is less than the minimum of 0" in score.reason


def test_a_plain_answer_is_checked_as_a_string() -> None:
    schema = {"type": "string", "maxLength": 5}
    assert scored(schema, Observed(answer="short")).passed
    assert not scored(schema, Observed(answer="too long")).passed
    assert not scored(PERSON, Observed(answer="")).passed


def test_a_schema_with_a_remote_ref_fails_the_case_without_fetching() -> None:
    # The port is loopback's discard port: nothing is fetched, whatever listens there.
    schema = {"$ref": "http://127.0.0.1:9/person.json"}
    score = scored(schema, Observed(answer="{}"))
    assert not score.passed
    assert score.reason.startswith("the case's schema is refused")


def test_without_a_schema_it_does_not_apply() -> None:
    assert JsonSchema()(Expected(output="x"), Observed(answer="x")) is None
