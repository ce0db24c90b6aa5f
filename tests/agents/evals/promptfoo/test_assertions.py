"""promptfoo's assertions as a case's expected fields, and what does not carry over said at
its path (docs/api.md#importing-a-promptfoo-configuration)."""

from __future__ import annotations

from tests.support.promptfoo import imported, warnings


def test_case_insensitive_contains_everywhere_sets_the_scorers_option() -> None:
    config = """
tests:
  - vars: {prompt: hi}
    assert:
      - {type: icontains, value: Hello}
      - {type: icontains-all, value: 'a, b'}
      - {type: not-icontains, value: bye}
"""
    result = imported(config)
    assert result.cases[0]["expected"] == {"contains": ["Hello", "a", "b"], "notContains": ["bye"]}
    assert result.scorers == [{"name": "contains", "ignoreCase": True}]
    assert result.warnings == []


def test_starts_with_and_case_insensitive_contains_any_are_regexes() -> None:
    config = """
tests:
  - vars: {prompt: a}
    assert: [{type: starts-with, value: 'Yes (1.5)'}]
  - vars: {prompt: b}
    assert:
      - {type: icontains-any, value: [a+b, c]}
      - {type: regex, value: x}
"""
    result = imported(config)
    assert result.cases[0]["expected"] == {"regex": "\\AYes \\(1\\.5\\)"}
    assert result.cases[1]["expected"] == {"regex": "(?i)a\\+b|c"}
    # A case has one regex: the second is left out, said where.
    assert "regular expression already" in warnings(result)[("config", "tests", 1, "assert", 1)]


def test_tool_trajectories_become_expected_calls() -> None:
    config = """
tests:
  - vars: {prompt: Book a flight}
    assert:
      - type: trajectory:tool-sequence
        value: {mode: exact, steps: [search_flights, book]}
      - type: trajectory:tool-args-match
        value: {name: book, args: {seat: aisle}}
  - vars: {prompt: 'Weather?'}
    assert:
      - {type: trajectory:tool-used, value: weather}
      - {type: trajectory:tool-used, value: [a, b]}
"""
    result = imported(config)
    assert result.cases[0]["expected"] == {
        "toolCalls": [{"name": "search_flights"}, {"name": "book", "arguments": {"seat": "aisle"}}],
        "toolCallsOrder": "exact",
    }
    assert result.cases[1]["expected"] == {"toolCalls": [{"name": "weather"}]}
    assert result.scorers == [{"name": "trajectory"}, {"name": "tool_args"}]
    assert "one tool's name" in warnings(result)[("config", "tests", 1, "assert", 1)]
    rag = imported(config, agent_type="rag")
    assert "calls no tools" in warnings(rag)[("config", "tests", 0, "assert", 0)]
    assert "expected" not in rag.cases[0]


def test_what_does_not_carry_over_is_said_where() -> None:
    config = """
assertionTemplates:
  short: {type: javascript, value: output.length < 9}
tests:
  - vars: {prompt: a}
    threshold: 0.5
    options: {transform: output.trim()}
    assert:
      - {$ref: '#/assertionTemplates/short'}
      - {type: not-equals, value: x}
      - {type: contains, value: a, transform: output.toLowerCase()}
      - {type: factuality, value: A is a}
      - {type: levenshtein, value: a, threshold: 2}
scenarios: []
"""
    notes = warnings(imported(config))
    at = ("config", "tests", 0)
    assert "`$ref`" in notes[(*at, "assert", 0)]
    assert "only its positive form" in notes[(*at, "assert", 1)]
    assert "runs code on the output" in notes[(*at, "assert", 2, "transform")]
    assert "`factuality` needs a model" in notes[(*at, "assert", 3)]
    assert "no expected field or scorer" in notes[(*at, "assert", 4)]
    assert "each scorer passes or fails" in notes[(*at, "threshold")]
    assert "runs code on the output" in notes[(*at, "options", "transform")]
    assert "scenario" in notes[("config", "scenarios")]
