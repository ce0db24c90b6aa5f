"""Filling a RAG agent's prompt template."""

from __future__ import annotations

from agents.runtime.rag_agent import fill_prompt


def test_both_placeholders_are_filled() -> None:
    template = "Context:\n{context_str}\nQuestion: {query_str}\nAgain: {query_str}"
    assert fill_prompt(template, "[1] (doc) text", "Why?") == (
        "Context:\n[1] (doc) text\nQuestion: Why?\nAgain: Why?"
    )


def test_placeholders_inside_the_passages_or_the_question_stay_as_written() -> None:
    template = "{context_str} | {query_str}"
    context = "[1] (templates) Write {query_str} where the question goes."
    question = "What does {context_str} do?"
    assert fill_prompt(template, context, question) == f"{context} | {question}"


def test_other_braces_are_left_alone() -> None:
    assert fill_prompt('{"json": true} {query_str}', "", "q") == '{"json": true} q'
