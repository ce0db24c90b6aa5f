"""The offline model `local.demo-v1` as a newcomer meets it, through the HTTP invoke routes:
a Calculator that understands arithmetic English and calls the tool that does the
operation, and RAG agents that answer from their passages whatever their prompt says."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents.examples import CALCULATOR, DOCUMENT_HELPER
from agents.models import Agent, Environment
from retrieval.services import document_create
from tests.support.native import Answer, completed_run, invoke

STREAMED = pytest.mark.parametrize("route", ["invoke", "invoke-stream"])


def function(name: str, description: str, func: str | None = None) -> dict[str, Any]:
    return {
        "toolType": "function",
        "name": name,
        "description": description,
        "funcName": func or name,
    }


def calculator_config(*tools: dict[str, Any]) -> dict[str, Any]:
    """The example Calculator on the offline model, with these tools."""
    config = copy.deepcopy(CALCULATOR["config"])
    config["llmModelId"] = "local.demo-v1"
    config["tools"] = list(tools)
    return config


FOUR_OPERATIONS = calculator_config(
    function("multiply", "Multiplies two numbers"),
    function("add", "Adds two numbers"),
    function("subtract", "Subtracts b from a"),
    function("divide", "Divides a by b"),
)


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


# (message, tool, a, b, the result as the tool renders it)
PHRASINGS = [
    ("What is 3x5?", "multiply", 3, 5, "15"),
    ("What is 12 times 11?", "multiply", 12, 11, "132"),
    ("Multiply 7 by 6", "multiply", 7, 6, "42"),
    ("what's 9 * 8", "multiply", 9, 8, "72"),
    ("How much is 25 multiplied by 4?", "multiply", 25, 4, "100"),
    ("Compute 13 × 3", "multiply", 13, 3, "39"),
    ("What is 2 plus 3?", "add", 2, 3, "5"),
    ("add 2 and 3", "add", 2, 3, "5"),
    ("10 divided by 4", "divide", 10, 4, "2.5"),
    ("subtract 3 from 10", "subtract", 10, 3, "7"),
    ("divide 10 by 4", "divide", 10, 4, "2.5"),
    ("What is seven times six?", "multiply", 7, 6, "42"),
    ("twenty-one plus four", "add", 21, 4, "25"),
    ("What is a hundred divided by four?", "divide", 100, 4, "25"),
    ("Take eight away from fifty", "subtract", 50, 8, "42"),
]


def tool_calls(answer: Answer) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for c in answer.calls]


@STREAMED
@pytest.mark.parametrize(
    ("text", "tool", "a", "b", "result"), PHRASINGS, ids=[p[0] for p in PHRASINGS]
)
def test_the_calculator_calls_the_tool_of_the_operation_and_states_the_result(
    route: str,
    text: str,
    tool: str,
    a: float,
    b: float,
    result: str,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = make_agent("Calculator", "tool", config=FOUR_OPERATIONS)

    answer = invoke(owner_client, agent, route, ask(text))

    assert answer.status == 200
    assert tool_calls(answer) == [(tool, {"a": a, "b": b})]
    assert answer.final_text == f"The result of {tool}({a}, {b}) is {result}."
    run = completed_run(owner_client, answer, answer.usage)
    assert run["messages"][2]["content"] == result  # what the tool answered


def test_a_tool_named_product_that_multiplies_is_called_for_times(
    make_agent: Any, owner_client: Any
) -> None:
    config = calculator_config(
        function("sum_up", "Adds two numbers", "add"),
        function("product", "Multiply two numbers", "multiply"),
    )
    agent = make_agent("Calculator", "tool", config=config)

    answer = invoke(owner_client, agent, "invoke", ask("seven times six"))

    assert tool_calls(answer) == [("product", {"a": 7, "b": 6})]
    assert answer.final_text == "The result of product(7, 6) is 42."


@pytest.mark.parametrize("text", ["Hello, who are you?", "What is the capital of France?"])
def test_a_message_without_arithmetic_calls_no_tool(
    text: str, make_agent: Any, owner_client: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=FOUR_OPERATIONS)

    answer = invoke(owner_client, agent, "invoke", ask(text))

    assert answer.status == 200
    assert answer.calls == []
    assert answer.text == f"You said: {text}"


def test_the_example_calculator_works_out_what_its_one_tool_cannot(
    make_agent: Any, owner_client: Any
) -> None:
    agent = make_agent(
        "Calculator", "tool", config=calculator_config(*CALCULATOR["config"]["tools"])
    )

    answer = invoke(owner_client, agent, "invoke", ask("What is 2 plus 3?"))

    assert answer.status == 200
    assert answer.calls == []
    assert answer.text == "None of my tools adds numbers, so I worked it out myself: 2 + 3 = 5."


def test_a_division_by_zero_comes_back_from_the_tool_as_its_error(
    make_agent: Any, owner_client: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=FOUR_OPERATIONS)

    answer = invoke(owner_client, agent, "invoke", ask("What is 7 divided by zero?"))

    assert tool_calls(answer) == [("divide", {"a": 7, "b": 0})]
    assert answer.final_text.startswith("I could not use divide:")
    assert "division by zero" in answer.final_text


# ---------------------------------------------------------------- RAG agents

HANDBOOK = (
    "Employee Handbook\n\n"
    "Vacation policy. Every full-time employee earns 25 days of paid vacation per year. "
    "Vacation requests go to your manager at least two weeks in advance.\n\n"
    "Working hours. The core hours are 10:00 to 16:00; the rest of the day is flexible."
)
VACATION_SENTENCE = "Every full-time employee earns 25 days of paid vacation per year."
HR_PROMPT = (
    "You are a helpful HR assistant. Use these passages:\n{context_str}\nAnswer this: {query_str}"
)


@pytest.fixture
def handbook(env: Environment, admin_user: Any, django_capture_on_commit_callbacks: Any) -> Any:
    with django_capture_on_commit_callbacks(execute=True):
        document = document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Employee Handbook",
            data=HANDBOOK.encode(),
            media_type="text/plain",
        )
    document.refresh_from_db()
    assert document.status == "ready", document.error
    return document


def rag_agent(make_agent: Any, **config: Any) -> Agent:
    return make_agent("hr-helper", "rag", config={"llmModelId": "local.demo-v1", **config})


@STREAMED
def test_a_rag_agent_with_its_own_prompt_answers_from_the_document(
    route: str, handbook: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, systemPrompt=HR_PROMPT)

    answer = invoke(owner_client, agent, route, ask("What is our vacation policy?"))

    assert answer.status == 200
    assert VACATION_SENTENCE in answer.text
    assert not answer.text.startswith("You said")


def test_its_grounding_check_passes_the_quote(
    handbook: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, systemPrompt=HR_PROMPT, enableHallucinationCheck=True)

    answer = invoke(owner_client, agent, "invoke", ask("What is our vacation policy?"))

    assert VACATION_SENTENCE in answer.text
    assert answer.body["customOutputs"]["hallucinationCheck"] == {"grounded": True, "score": 1.0}


def test_a_question_the_document_does_not_answer_is_not_known(
    handbook: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = rag_agent(make_agent, systemPrompt=HR_PROMPT)

    answer = invoke(owner_client, agent, "invoke", ask("Who won the football match?"))

    assert answer.text == "I do not know: the documents do not say."


def test_the_sample_document_helper_still_answers_from_the_document(
    handbook: Any, make_agent: Any, owner_client: Any
) -> None:
    agent = make_agent("document-helper", "rag", config=DOCUMENT_HELPER["config"])

    answer = invoke(owner_client, agent, "invoke", ask("What is our vacation policy?"))

    assert answer.status == 200
    assert VACATION_SENTENCE in answer.text
