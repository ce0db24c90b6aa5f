"""The offline model `local.demo-v1` on its own: ModelRequests built here, no runtime.

Its arithmetic reading, the tool it picks for an operation, its answers by purpose, what it
says of attachments, and how it counts tokens."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agents.llm.base import (
    Attachment,
    Finished,
    Message,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
)
from agents.llm.local import LocalModel
from agents.llm.local_arith import (
    Operation,
    arithmetic_tool,
    operation_arguments,
    read_operation,
    with_figures,
)
from agents.runtime.tools.functions import REGISTRY

MODEL = "local.demo-v1"


def function(name: str, *, as_name: str | None = None, description: str | None = None) -> ToolSpec:
    """A tool over a registered function, as a config could name and describe it."""
    registered = REGISTRY[name]
    return ToolSpec(
        as_name or name,
        registered.description if description is None else description,
        registered.parameters,
    )


CALCULATOR = tuple(function(n) for n in ("multiply", "add", "subtract", "divide"))


def run(request: ModelRequest) -> list[ProviderEvent]:
    async def collect() -> list[ProviderEvent]:
        return [event async for event in LocalModel().stream(request)]

    return asyncio.run(collect())


def ask(text: str, tools: tuple[ToolSpec, ...] = CALCULATOR, **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        MODEL, "You are a helpful assistant.", (Message("user", text),), tools, **kwargs
    )


def answer_text(events: list[ProviderEvent]) -> str:
    assert not [e for e in events if isinstance(e, ToolCallChunk)], events
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def the_call(events: list[ProviderEvent]) -> tuple[str, dict[str, Any]]:
    [call] = [e.call for e in events if isinstance(e, ToolCallChunk)]
    assert isinstance(events[-1], Finished)
    assert events[-1].stop_reason == "tool_use"
    return call.name, json.loads(call.arguments)


# ---------------------------------------------------------------- reading arithmetic

# (message, operation, a, b): the phrasings of issue 11 and their number-word twins
PHRASINGS = [
    ("What is 3x5?", "multiply", 3, 5),
    ("What is 12 times 11?", "multiply", 12, 11),
    ("Multiply 7 by 6", "multiply", 7, 6),
    ("what's 9 * 8", "multiply", 9, 8),
    ("How much is 25 multiplied by 4?", "multiply", 25, 4),
    ("Compute 13 × 3", "multiply", 13, 3),
    ("What is 2 plus 3?", "add", 2, 3),
    ("add 2 and 3", "add", 2, 3),
    ("10 divided by 4", "divide", 10, 4),
    ("subtract 3 from 10", "subtract", 10, 3),
    ("divide 10 by 4", "divide", 10, 4),
    ("What is seven times six?", "multiply", 7, 6),
    ("twenty-one plus four", "add", 21, 4),
    ("What is a hundred divided by four?", "divide", 100, 4),
    ("Subtract nineteen from ninety-nine", "subtract", 99, 19),
    ("What is the sum of 4 and 5?", "add", 4, 5),
    ("product of 6 and 7", "multiply", 6, 7),
    ("add 2 to 3", "add", 3, 2),
    ("take 4 away from 9", "subtract", 9, 4),
    ("What is 12 minus 5?", "subtract", 12, 5),
    ("7-2", "subtract", 7, 2),
    ("divide 4 into 10", "divide", 10, 4),
    ("What is 2.5 times 4?", "multiply", 2.5, 4),
    ("What is -3 times 4?", "multiply", -3, 4),
    ("negative five plus two", "add", -5, 2),
    ("What is 1,000 divided by 8?", "divide", 1000, 8),
    ("What is 3x5 and 2x4?", "multiply", 3, 5),  # the first operation asked for
]


@pytest.mark.parametrize(("text", "op", "a", "b"), PHRASINGS, ids=[p[0] for p in PHRASINGS])
def test_arithmetic_english_is_read_as_an_operation_with_its_operands_in_order(
    text: str, op: str, a: float, b: float
) -> None:
    assert read_operation(text) == Operation(op, a, b)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Hello, who are you?",
        "What is the capital of France?",
        "Tell me a joke about numbers",
        "Which one is better?",
        "The meeting is on 2024-01-15 at 10:30-11:00",
        "Multiply 7",
        'Search the documents for "10 - 3 rule"',
        "",
    ],
)
def test_other_messages_are_no_operation(text: str) -> None:
    assert read_operation(text) is None


@pytest.mark.parametrize(
    ("words", "figures"),
    [
        ("zero", "0"),
        ("seven", "7"),
        ("nineteen", "19"),
        ("twenty-one", "21"),
        ("ninety nine", "99"),
        ("a hundred", "100"),
        ("One hundred", "100"),
        ("two hundred five", "205"),
        ("a hundred and five", "100 and 5"),
        ("seven times six", "7 times 6"),
        ("someone often weighs eight", "someone often weighs 8"),
    ],
)
def test_number_words_become_figures(words: str, figures: str) -> None:
    assert with_figures(words) == figures


def test_the_result_is_worked_out_and_a_division_by_zero_has_none() -> None:
    assert Operation("add", 2, 3).worked_out() == "2 + 3 = 5."
    assert Operation("divide", 10, 4).worked_out() == "10 / 4 = 2.5."
    assert Operation("subtract", 3, 10).worked_out() == "3 − 10 = -7."
    assert Operation("divide", 1, 0).worked_out() == (
        "1 / 0 has no value: no number can be divided by zero."
    )


# ---------------------------------------------------------------- the tool for an operation


def test_the_tool_is_picked_by_what_it_means_not_by_its_name() -> None:
    product = function("multiply", as_name="product", description="Multiply two numbers")
    total = function("add", as_name="total", description="Adds two numbers up")
    tools = (total, product)

    assert arithmetic_tool(tools, "multiply") == product
    assert arithmetic_tool(tools, "add") == total
    assert arithmetic_tool(tools, "divide") is None


def test_a_formula_in_the_description_says_what_a_tool_does() -> None:
    tool = function("divide", as_name="calc_q", description="Returns a / b")
    assert arithmetic_tool((tool,), "divide") == tool
    assert arithmetic_tool((tool,), "subtract") is None


def test_a_tool_without_two_number_parameters_does_no_arithmetic() -> None:
    words_only = ToolSpec(
        "multiply_words",
        "Multiply two numbers written as text",
        {"type": "object", "properties": {"text": {"type": "string"}}},
    )
    assert arithmetic_tool((words_only,), "multiply") is None


def test_operands_go_to_the_first_two_number_parameters_in_schema_order() -> None:
    tool = ToolSpec(
        "divide",
        "Divide",
        {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "dividend": {"type": "integer"},
                "divisor": {"type": "number"},
            },
        },
    )
    assert operation_arguments(tool, Operation("divide", 10, 4)) == {"dividend": 10, "divisor": 4}
    assert operation_arguments(tool, Operation("divide", 2.5, 4)) == {
        "dividend": 2.5,
        "divisor": 4,
    }


@pytest.mark.parametrize(("text", "op", "a", "b"), PHRASINGS, ids=[p[0] for p in PHRASINGS])
def test_the_model_calls_the_tool_of_the_operation(text: str, op: str, a: float, b: float) -> None:
    assert the_call(run(ask(text))) == (op, {"a": a, "b": b})


def test_product_described_as_multiplying_is_called_for_times() -> None:
    product = function("multiply", as_name="product", description="Multiply two numbers")
    others = (function("add"), function("subtract"))

    assert the_call(run(ask("seven times six", (*others, product)))) == (
        "product",
        {"a": 7, "b": 6},
    )


def test_with_no_tool_for_the_operation_the_model_works_it_out_and_says_so() -> None:
    only_multiply = (function("multiply", description="Multiplies two numbers"),)

    assert answer_text(run(ask("What is 2 plus 3?", only_multiply))) == (
        "None of my tools adds numbers, so I worked it out myself: 2 + 3 = 5."
    )
    assert answer_text(run(ask("What is 10 divided by 4?", ()))) == "10 / 4 = 2.5."


def test_the_answer_after_the_tool_states_the_result() -> None:
    call = ToolCallPart("tooluse_local_1", "divide", '{"a": 10, "b": 4}')
    messages = (
        Message("user", "10 divided by 4"),
        Message("assistant", "", (call,)),
        Message("tool", "2.5", tool_call_id=call.call_id, name="divide"),
    )
    request = ModelRequest(MODEL, "", messages, CALCULATOR)

    assert answer_text(run(request)) == "The result of divide(10, 4) is 2.5."


@pytest.mark.parametrize(
    "text", ["Hello, who are you?", "What is the capital of France?", "Tell me a joke"]
)
def test_a_message_without_arithmetic_calls_no_tool(text: str) -> None:
    assert answer_text(run(ask(text))) == f"You said: {text}"


def test_a_named_tool_missing_its_arguments_is_asked_for_not_called() -> None:
    assert answer_text(run(ask("Can you multiply?"))) == (
        "I can use multiply, but I need a and b: give them as numbers, in figures or words."
    )
    assert answer_text(run(ask("multiply 3 by something"))) == (
        "I can use multiply, but I need b: give it as a number, in figures or words."
    )


def test_other_tools_still_get_numbers_and_quoted_strings() -> None:
    sleep = ToolSpec(
        "sleep",
        "Sleep for some seconds",
        {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    )
    search = ToolSpec(
        "search_documents",
        "Searches the company documents",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )

    assert the_call(run(ask("Sleep five seconds", (sleep, search)))) == ("sleep", {"seconds": 5})
    assert the_call(run(ask('Search the documents for "10 - 3 rule"', (*CALCULATOR, search)))) == (
        "search_documents",
        {"query": "10 - 3 rule"},
    )


# ---------------------------------------------------------------- purposes


PASSAGES = (
    "Employee Handbook\n\nVacation policy. Every full-time employee earns 25 days of paid "
    "vacation per year. Vacation requests go to your manager at least two weeks in advance.",
    "How do I reset my password? Open Settings, choose Security and click Reset password.",
)


def rag(question: str, system: str, context: tuple[str, ...] = PASSAGES) -> ModelRequest:
    return ModelRequest(
        MODEL, system, (Message("user", question),), purpose="rag_answer", context=context
    )


@pytest.mark.parametrize(
    "system",
    [
        "You are a helpful HR assistant. Use these passages:\n(passages)\nAnswer this: (q)",
        "Context: whatever the template says",
        "",
    ],
)
def test_a_rag_answer_quotes_its_passages_whatever_the_prompt(system: str) -> None:
    text = answer_text(run(rag("What is our vacation policy?", system)))

    assert "Every full-time employee earns 25 days of paid vacation per year." in text


def test_a_rag_answer_prefers_statements_to_the_questions_of_an_faq() -> None:
    text = answer_text(run(rag("How do I reset my password?", "")))

    assert text.startswith("Open Settings, choose Security and click Reset password.")


def test_a_rag_answer_without_matching_passages_does_not_know() -> None:
    assert answer_text(run(rag("Who won the match?", ""))) == (
        "I do not know: the documents do not say."
    )
    assert answer_text(run(rag("What is our vacation policy?", "", ()))) == (
        "I do not know: the documents do not say."
    )


def test_a_chat_whose_prompt_says_context_is_a_chat() -> None:
    system = "Context:\nEvery employee earns 25 days."
    request = ModelRequest(MODEL, system, (Message("user", "Hello"),))
    assert answer_text(run(request)) == "You said: Hello"


def test_a_query_rewrite_keeps_the_content_words() -> None:
    request = ModelRequest(
        MODEL,
        "any prompt",
        (Message("user", "How many days off do I get each year?"),),
        purpose="query_rewrite",
    )
    assert answer_text(run(request)) == "many days off get each year"


def test_a_grounding_check_goes_by_the_passages() -> None:
    tool = ToolSpec("check", "Report", {"type": "object"})

    def check(answer: str) -> dict[str, Any]:
        content = f"Context:\n[1] (Handbook) {PASSAGES[0]}\n\nAnswer:\n{answer}"
        request = ModelRequest(
            MODEL,
            "",
            (Message("user", content),),
            (tool,),
            force_tool="check",
            purpose="grounding_check",
            context=PASSAGES[:1],
        )
        return the_call(run(request))[1]

    assert check("Every full-time employee earns 25 days of paid vacation per year.") == {
        "grounded": True,
        "score": 1.0,
    }
    assert check("Employees get unlimited vacation and a company car.") == {
        "grounded": False,
        "score": 0.0,
    }


def test_a_judge_scores_the_share_of_the_reference_s_words_the_answer_has() -> None:
    tool = ToolSpec("judge_score", "Report", {"type": "object"})

    def judge(answer: str, reference: str) -> dict[str, Any]:
        # The prompt's wording is not read: the answer and its reference come as context.
        request = ModelRequest(
            MODEL,
            "Grade it.",
            (Message("user", "<answer>ignored</answer>"),),
            (tool,),
            force_tool="judge_score",
            purpose="judge",
            context=(answer, reference),
        )
        return the_call(run(request))[1]

    assert judge("Vacation is 25 days a year.", "25 days of vacation per year") == {
        "score": 0.75,
        "reason": "the answer has 3 of the reference's 4 words: it lacks per",
    }
    assert judge("Twenty-five days.", "Twenty-five days.")["score"] == 1.0
    assert judge("", "days")["score"] == 0.0
    assert judge("anything", "") == {"score": 1.0, "reason": "an answer"}
    assert judge("", "") == {"score": 0.0, "reason": "no answer"}


def test_a_task_restates_its_prompt_and_fills_its_schema_from_it() -> None:
    prompt = "Rate the sentiment of this review of Acme kettle: 2 minutes, very positive."
    inputs = Message("user", 'Inputs:\n{"product": "Acme kettle"}')
    plain = ModelRequest(MODEL, prompt, (inputs,), purpose="task")
    schema = {
        "type": "object",
        "properties": {
            "sentiment": {"type": "string", "enum": ["positive", "negative"]},
            "score": {"type": "integer"},
        },
    }
    tool = ToolSpec("task_output", "Answer", schema)
    forced = ModelRequest(MODEL, prompt, (inputs,), (tool,), "task_output", purpose="task")

    assert answer_text(run(plain)) == f"Done: {prompt}"
    assert the_call(run(forced)) == ("task_output", {"sentiment": "positive", "score": 2})


def test_a_chat_message_that_looks_like_task_inputs_is_a_chat() -> None:
    assert answer_text(run(ask("Inputs: none", ()))) == "You said: Inputs: none"


# ---------------------------------------------------------------- attachments

PNG = Attachment("image", "image/png", b"\x89PNG" + bytes(1230))
PDF = Attachment("document", "application/pdf", b"%PDF" + bytes(2044), name="q3.pdf")


def with_attachments(text: str, *attachments: Attachment, tools: tuple[ToolSpec, ...] = ()) -> str:
    message = Message("user", text, attachments=attachments)
    return answer_text(run(ModelRequest(MODEL, "", (message,), tools)))


def test_an_image_is_described_and_the_model_says_it_cannot_see_it() -> None:
    assert with_attachments("", PNG) == (
        "I received an image (image/png, 1234 bytes), but I cannot see images: "
        "I am the offline model."
    )


def test_the_text_beside_an_attachment_is_answered_too() -> None:
    assert with_attachments("What is in this picture?", PNG) == (
        "I received an image (image/png, 1234 bytes), but I cannot see images: "
        "I am the offline model. You said: What is in this picture?"
    )
    assert with_attachments("What is 2 plus 3?", PNG, tools=CALCULATOR[:1]).endswith(
        "I am the offline model. None of my tools adds numbers, so I worked it out myself: "
        "2 + 3 = 5."
    )


def test_several_attachments_are_listed_in_order() -> None:
    assert with_attachments("", PNG, PDF, PNG) == (
        "I received 3 attachments: an image (image/png, 1234 bytes), "
        'a document "q3.pdf" (application/pdf, 2048 bytes) and an image (image/png, 1234 bytes),'
        " but I cannot see images or read documents: I am the offline model."
    )
    assert with_attachments("", PDF) == (
        'I received a document "q3.pdf" (application/pdf, 2048 bytes), but I cannot read '
        "documents: I am the offline model."
    )


def test_an_attachment_does_not_keep_the_model_from_its_tools() -> None:
    message = Message("user", "What is 3x5?", attachments=(PNG, PDF))
    request = ModelRequest(MODEL, "", (message,), CALCULATOR)

    assert the_call(run(request)) == ("multiply", {"a": 3, "b": 5})


def test_an_attachment_counts_as_the_words_that_describe_it() -> None:
    def input_tokens(*attachments: Attachment) -> int:
        message = Message("user", "Look", attachments=attachments)
        finished = run(ModelRequest(MODEL, "", (message,)))[-1]
        assert isinstance(finished, Finished)
        return finished.usage.input_tokens

    assert input_tokens() == 1
    assert input_tokens(PNG) == 1 + 5  # an image (image/png, 1234 bytes)
    assert input_tokens(PNG, PDF) == 1 + 5 + 6  # a document "q3.pdf" (application/pdf, 2048 bytes)


# ---------------------------------------------------------------- determinism


def test_the_same_request_gets_the_same_events() -> None:
    for text in ("What is 12 times 11?", "Hello", "What is 2 plus 3?"):
        assert run(ask(text)) == run(ask(text))
