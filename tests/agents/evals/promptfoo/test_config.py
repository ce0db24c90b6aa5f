"""A promptfoo configuration imported (docs/api.md#importing-a-promptfoo-configuration): its
tests as cases that pass case_check, the message a tool or RAG agent is sent, and files and
malformed input refused at their path."""

from __future__ import annotations

from typing import Any

import pytest

from agentbuilder.errors import Invalid
from agents.evals.files import MAX_YAML_BYTES
from agents.evals.promptfoo import promptfoo_import
from tests.support.promptfoo import imported, refused, warnings

SUPPORT_BOT = """
description: Acme support bot
prompts:
  - |-
    You are a support agent for {{company}}. Answer the customer briefly.
    Customer: {{question}}
providers:
  - openai:gpt-4o-mini
  - bedrock:anthropic.claude-3-haiku-20240307-v1:0
defaultTest:
  vars:
    company: Acme
  options:
    provider: openai:chat:gpt-4o-mini
  assert:
    - type: llm-rubric
      value: is polite and does not promise a refund it cannot give
    - type: latency
      threshold: 3000
tests:
  - description: refund window
    vars:
      question: Can I get a refund after two weeks?
    metadata:
      area: billing
    assert:
      - type: contains
        value: 30 days
      - type: not-contains
        value: guaranteed
  - description: order status
    vars:
      question:
        - Where is my order?
        - Track my package
    assert:
      - type: contains-any
        value: [tracking number, order number]
      - type: javascript
        value: output.length < 500
  - vars:
      question: What is your phone number?
    assert:
      - type: regex
        value: '\\d{3}-\\d{4}'
      - type: not-contains-any
        value: [email, fax]
  - vars:
      question: Reply with our hours as JSON
    assert:
      - type: is-json
        value:
          type: object
          required: [open, close]
      - type: similar
        value: 9 to 5
        threshold: 0.8
"""


def test_a_support_bot_configuration_becomes_cases_and_scorers() -> None:
    result = imported(SUPPORT_BOT)
    assert len(result.cases) == 5  # the order test's question list makes two
    first = result.cases[0]
    assert first["input"] == {
        "messages": [
            {
                "role": "user",
                "content": "You are a support agent for Acme. Answer the customer briefly.\n"
                "Customer: Can I get a refund after two weeks?",
            }
        ]
    }
    assert first["expected"] == {"contains": ["30 days"], "notContains": ["guaranteed"]}
    assert first["metadata"] == {
        "area": "billing",
        "description": "refund window",
        "vars": {"company": "Acme", "question": "Can I get a refund after two weeks?"},
    }
    orders = result.cases[1:3]
    assert [c["metadata"]["vars"]["question"] for c in orders] == [
        "Where is my order?",
        "Track my package",
    ]
    assert orders[0]["expected"] == {"regex": "tracking number|order number"}
    assert result.cases[3]["expected"] == {
        "regex": "\\d{3}-\\d{4}",
        "notContains": ["email", "fax"],
    }
    assert result.cases[4]["expected"] == {
        "outputSchema": {"type": "object", "required": ["open", "close"]}
    }
    assert result.scorers == [
        {"name": "contains"},
        {"name": "regex"},
        {"name": "json_schema"},
        {"name": "max_latency_ms", "max": 3000},
        {
            "name": "judge",
            "model": "openai/gpt-4o-mini",
            "rubric": "is polite and does not promise a refund it cannot give",
        },
    ]
    notes = warnings(result)
    assert set(notes) == {
        ("config", "tests", 1, "assert", 1),
        ("config", "tests", 3, "assert", 1),
    }
    assert "`javascript` assertions run code" in notes[("config", "tests", 1, "assert", 1)]
    assert "`similar` needs a model" in notes[("config", "tests", 3, "assert", 1)]


def test_a_task_agents_cases_take_the_vars_as_inputs() -> None:
    config = """
prompts: ['Summarize {{text}} in {{words}} words']
tests:
  - vars: {text: A long article, words: 20, options: {tone: dry}}
    assert:
      - type: equals
        value: {summary: short}
  - vars: {text: Another, words: 5}
    assert:
      - type: equals
        value: '{{words}} words'
"""
    result = imported(config, agent_type="task")
    assert [c["input"] for c in result.cases] == [
        {"inputs": {"text": "A long article", "words": 20, "options": {"tone": "dry"}}},
        {"inputs": {"text": "Another", "words": 5}},
    ]
    assert [c["expected"] for c in result.cases] == [
        {"output": {"summary": "short"}},
        {"output": "5 words"},  # an assertion's value is rendered with the test's vars
    ]
    assert "metadata" not in result.cases[0]
    assert result.scorers == [{"name": "exact"}]


def test_the_user_message_can_be_one_var_and_a_chat_prompt_keeps_its_messages() -> None:
    config = """
prompts:
  - '[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{query}}"}]'
tests:
  - vars: {query: 'What are your hours?', lang: en}
"""
    [case] = imported(config).cases
    assert case["input"] == {
        "messages": [
            {"role": "system", "content": "Be brief"},
            {"role": "user", "content": "What are your hours?"},
        ]
    }
    [case] = imported(config, input_var="query", agent_type="rag").cases
    assert case["input"] == "What are your hours?"
    loc, msg = refused(config, input_var="question")
    assert loc == ["config", "tests", 0, "vars"]
    assert msg == "no var 'question' (input_var)"


def test_without_prompts_promptfoos_default_passes_the_prompt_var() -> None:
    [case] = imported("tests:\n  - vars: {prompt: Hello there}\n").cases
    assert case["input"] == {"messages": [{"role": "user", "content": "Hello there"}]}
    loc, msg = refused("tests:\n  - vars: {question: Hello there}\n")
    assert loc == ["config", "tests", 0, "vars"]
    assert "name the var holding the user message (input_var)" in msg


def test_prefix_suffix_and_default_asserts_disabled() -> None:
    config = """
prompts: ['{{q}}']
defaultTest:
  assert: [{type: contains, value: always}]
tests:
  - vars: {q: one}
    options: {prefix: 'Q: ', suffix: ' (brief)', disableDefaultAsserts: true}
    assert: [{type: icontains, value: ONE}]
  - vars: {q: two}
"""
    result = imported(config)
    assert result.cases[0]["input"]["messages"][0]["content"] == "Q: one (brief)"
    assert result.cases[0]["expected"] == {"contains": ["ONE"]}
    assert result.cases[1]["expected"] == {"contains": ["always"]}
    assert result.scorers == [{"name": "contains"}]
    [note] = result.warnings
    assert note.loc == ("config", "tests", 0, "assert", 0)
    assert note.type == "approximated"


def test_files_are_refused_at_their_path() -> None:
    assert refused("tests: file://tests.csv\n")[0] == ["config", "tests"]
    assert refused("tests: [file://tests.yaml]\n")[0] == ["config", "tests", 0]
    assert refused("tests:\n  - path: file://gen.py:create\n")[0] == ["config", "tests", 0]
    loc, msg = refused("tests:\n  - vars: {doc: file://a.pdf, prompt: x}\n")
    assert loc == ["config", "tests", 0, "vars", "doc"]
    assert "read from a file" in msg
    assert refused("tests:\n  - vars: file://vars.yaml\n")[0] == ["config", "tests", 0, "vars"]
    loc, msg = refused("prompts: [file://prompt.txt]\ntests: [{vars: {q: a}}]\n")
    assert loc == ["config", "prompts", 0]
    assert "paste it inline, or name the var" in msg
    assert refused("prompts: [prompts/main.txt]\ntests: [{vars: {q: a}}]\n")[0] == [
        "config",
        "prompts",
        0,
    ]
    # With the message in a var, the prompt is not needed.
    config = "prompts: [file://prompt.txt]\ntests: [{vars: {q: a}}]\n"
    assert imported(config, input_var="q").cases[0]["input"] == "a"
    bad_value = (
        "tests:\n  - vars: {prompt: a}\n    assert: [{type: equals, value: file://x.json}]\n"
    )
    assert refused(bad_value)[0] == ["config", "tests", 0, "assert", 0, "value"]
    assert refused("defaultTest: file://default.yaml\ntests: [{vars: {prompt: a}}]\n")[0] == [
        "config",
        "defaultTest",
    ]


def test_malformed_configurations_are_refused_at_their_path() -> None:
    def at(config: str) -> list[Any]:
        return refused(config)[0]

    assert at("- a list\n") == ["config"]
    assert at("prompts: [x]\n") == ["config", "tests"]
    assert at("tests: [{vars: {prompt: a}, assert: [{value: 1}]}]") == [
        "config",
        "tests",
        0,
        "assert",
        0,
        "type",
    ]
    assert at("tests: [{vars: {prompt: a}, assert: [{type: regex, value: '(?<=a)b'}]}]") == [
        "config",
        "tests",
        0,
        "assert",
        0,
        "value",
    ]
    assert at("tests: [{vars: {prompt: a}, assert: [{type: latency}]}]")[-1] == "threshold"
    assert at("tests: [{vars: {prompt: a}, assert: [{type: contains-all, value: 3}]}]")[-1] == (
        "value"
    )
    assert at("tests: [{vars: {prompt: a}, assert: [{type: is-json, value: [1]}]}]")[-1] == (
        "value"
    )
    assert at("tests: [{vars: {prompt: a}, assert: [{type: contains, value: [x]}]}]")[-1] == (
        "value"
    )
    assert at("tests: [{vars: {prompt: a}, assert: {type: contains}}]") == [
        "config",
        "tests",
        0,
        "assert",
    ]
    tool_args = "tests: [{vars: {prompt: a}, assert: [{type: 'trajectory:tool-args-match'}]}]"
    assert at(tool_args)[-1] == "value"
    assert at("tests: [{vars: {prompt: a}}]\nx: [")[:3] == ["config", "line", 2]


def test_a_prompt_using_a_var_the_test_does_not_set_is_refused_at_its_vars() -> None:
    loc, msg = refused("prompts: ['{{question}}']\ntests: [{vars: {q: a}}]\n")
    assert loc == ["config", "tests", 0, "vars"]
    assert "'question' is undefined" in msg
    loc, msg = refused("prompts: ['{{ q | nosuchfilter }}']\ntests: [{vars: {q: a}}]\n")
    assert loc == ["config", "prompts", 0]
    assert msg.startswith("not a template we render")


def test_vars_lists_past_10000_combinations_are_refused() -> None:
    values = ", ".join(f"v{i}" for i in range(101))
    config = f"tests:\n  - vars: {{a: [{values}], b: [{values}], prompt: x}}\n"
    loc, msg = refused(config)
    assert loc == ["config", "tests"]
    assert msg.startswith("more than 10,000 cases")


def test_a_configuration_past_the_bound_is_refused_unread() -> None:
    config = "tests: [{vars: {prompt: a}}]\n#" + "x" * MAX_YAML_BYTES
    assert refused(config)[0] == ["config"]


def test_bytes_are_read_as_a_file_is() -> None:
    config = b"\xef\xbb\xbftests: [{vars: {prompt: caf\xc3\xa9}}]\n"
    [case] = promptfoo_import(config, agent_type="tool").cases
    assert case["input"]["messages"][0]["content"] == "café"
    with pytest.raises(Invalid) as raised:
        promptfoo_import(b"tests: \xff", agent_type="tool")
    assert raised.value.errors[0].loc == ("config",)
