"""A case as a row of the admin's table and back (agents/evals/table.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agentbuilder.errors import Invalid
from agents.evals.cases import case_check
from agents.evals.table import case_of, row_field, row_of


def stored(case: Any, agent_type: str = "tool") -> dict[str, Any]:
    return case_check(case, agent_type=agent_type, loc=("body",))


FULL = {
    "input": {"messages": [{"role": "user", "content": "What is 3x5?"}]},
    "expected": {
        "output": "15",
        "contains": ["15", "fifteen"],
        "notContains": ["16"],
        "regex": "^\\d+$",
        "toolCalls": [{"name": "multiply", "arguments": {"a": 3, "b": 5}}],
        "toolCallsOrder": "exact",
    },
    "metadata": {"tags": ["arith"]},
}


def test_every_field_of_a_case_reads_back_the_same_from_its_row() -> None:
    case = stored(FULL)

    row = row_of(case)

    assert row["input"] == "What is 3x5?"
    assert row["contains"] == "15\nfifteen"
    assert row["regex"] == "^\\d+$"
    assert '"toolCallsOrder": "exact"' in row["more"]
    assert stored(case_of(row, agent_type="tool")) == case


def test_plain_texts_say_a_message_names_of_calls_and_a_structured_output() -> None:
    row = {
        "input": "Hi",
        "output": '{"answer": 15}',
        "contains": "a\n\n b \n",
        "toolCalls": "search\nmultiply\n",
        "regex": "",
        "more": "",
        "metadata": "",
    }

    case = case_of(row, agent_type="tool")

    assert case == {
        "input": "Hi",
        "expected": {
            "output": {"answer": 15},
            "contains": ["a", " b "],
            "toolCalls": [{"name": "search"}, {"name": "multiply"}],
        },
    }
    assert row_of(stored(case))["toolCalls"] == "search\nmultiply"


def test_a_conversation_and_task_inputs_are_json() -> None:
    chat = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "What is 3x5?"},
    ]
    row = row_of(stored({"input": {"messages": chat}}))
    assert case_of(row, agent_type="tool")["input"] == {"messages": chat}
    task = stored({"input": {"inputs": {"text": "Parts."}}}, "task")
    assert case_of(row_of(task), agent_type="task") == {"input": {"inputs": {"text": "Parts."}}}
    assert "expected" not in case_of(row_of(task), agent_type="task")


@pytest.mark.parametrize(
    ("row", "agent_type", "field"),
    [
        ({"input": ""}, "tool", "input"),
        ({"input": "[{"}, "tool", "input"),
        ({"input": "not json"}, "task", "input"),
        ({"input": "[1]", "metadata": "[1]"}, "tool", "metadata"),
        ({"input": "Hi", "toolCalls": "[{"}, "tool", "toolCalls"),
        ({"input": "Hi", "more": '{"output": "x"}'}, "tool", "more"),
        ({"input": "Hi", "regex": 3}, "tool", "regex"),
    ],
)
def test_a_text_that_reads_as_nothing_is_refused_at_its_cell(
    row: dict[str, Any], agent_type: str, field: str
) -> None:
    with pytest.raises(Invalid) as raised:
        case_of(row, agent_type=agent_type)
    assert raised.value.errors[0].loc == ("row", field)


@pytest.mark.parametrize(
    ("loc", "field"),
    [
        (("body", 3, "expected", "regex"), "regex"),
        (("row", 0, "input", "messages", 0, "content"), "input"),
        (("row", "expected", "toolCalls", 1, "name"), "toolCalls"),
        (("row", "expected", "outputSchema", "type"), "more"),
        (("row", "metadata"), "metadata"),
        (("row", 0), None),
        (("row", "expected"), None),
    ],
)
def test_a_case_error_path_names_the_cell_it_belongs_to(loc: Any, field: str | None) -> None:
    assert row_field(loc) == field
