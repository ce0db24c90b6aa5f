"""The scorers an imported promptfoo configuration runs with: bounds and rubrics that are the
experiment's, the judge's model (docs/api.md#importing-a-promptfoo-configuration)."""

from __future__ import annotations

from agents.evals.promptfoo.scorers import catalog_model
from tests.support.promptfoo import imported, warnings


def test_bounds_that_differ_between_tests_keep_the_strictest() -> None:
    config = """
tests:
  - vars: {prompt: a}
    assert: [{type: latency, threshold: 2000}, {type: cost, threshold: 0.01}]
  - vars: {prompt: b}
    assert: [{type: latency, threshold: 1500.5}, {type: cost}]
"""
    result = imported(config)
    assert result.scorers == [
        {"name": "max_latency_ms", "max": 1500},
        {"name": "max_cost_usd", "max": 0.01},
    ]
    notes = warnings(result)
    assert "the tests' differ" in notes[("config", "tests", 1, "assert", 0)]
    assert "other tests have none" in notes[("config", "tests", 0, "assert", 1)]
    assert "without a threshold" in notes[("config", "tests", 1, "assert", 1)]


def test_a_rubric_that_is_not_every_tests_is_left_out() -> None:
    config = """
tests:
  - vars: {prompt: a}
    assert: [{type: llm-rubric, value: is kind, provider: 'bedrock:amazon.nova-micro-v1:0'}]
  - vars: {prompt: b}
    assert: [{type: llm-rubric, value: is short}]
"""
    result = imported(config)
    assert result.scorers == []
    assert set(warnings(result)) == {
        ("config", "tests", 0, "assert", 0),
        ("config", "tests", 1, "assert", 0),
    }
    same = config.replace("is short", "is kind")
    assert imported(same).scorers == [
        {"name": "judge", "model": "amazon.nova-micro-v1:0", "rubric": "is kind"}
    ]
    assert imported(same, judge_model="local.demo-v1").scorers[0]["model"] == "local.demo-v1"


def test_a_rubric_without_a_grader_is_left_out_unless_a_model_is_named() -> None:
    config = "tests:\n  - vars: {prompt: a}\n    assert: [{type: llm-rubric, value: is kind}]\n"
    result = imported(config)
    assert result.scorers == []
    assert "no grader model" in warnings(result)[("config", "tests", 0, "assert", 0)]
    assert imported(config, judge_model="local.demo-v1").scorers == [
        {"name": "judge", "model": "local.demo-v1", "rubric": "is kind"}
    ]


def test_catalog_model_reads_promptfoos_provider_ids() -> None:
    assert catalog_model("openai:gpt-4o-mini") == "openai/gpt-4o-mini"
    assert catalog_model({"id": "openai:chat:gpt-4o"}) == "openai/gpt-4o"
    assert catalog_model("bedrock:converse:amazon.nova-micro-v1:0") == "amazon.nova-micro-v1:0"
    assert catalog_model("anthropic:messages:claude") == "anthropic:messages:claude"
    assert catalog_model(None) is None
