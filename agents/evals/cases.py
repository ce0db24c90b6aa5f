"""A dataset's case on the wire and as stored (docs/api.md#datasets): what to send the
agent, and what its answer should be.

`input` is what an invoke route takes, for the dataset's agent type: `{"messages": [...]}`
for tool and RAG agents (a bare string is one user message), `{"inputs": {...}}` for task
agents. A case is checked for its shape when it is saved; a task case's inputs are checked
against a version's input schema when an experiment runs that version
(agents.evals.experiments), since a dataset serves every agent of its type.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import re2
from pydantic import Field, model_validator

from agentbuilder.errors import Invalid, Loc
from agentbuilder.wire import CamelModel, parse
from agents.evals.scorers.base import Expected, ExpectedCall
from agents.json_schemas import SchemaRefused
from agents.json_schemas import check as schema_check
from agents.protocols.native.request import InputMessage
from agents.runs.request import TASK_TYPES

MAX_CASES_PER_CALL = 10_000
# An answer is checked against at most so many substrings: a case is a test, not a corpus.
MAX_STRINGS = 100


class ExpectedCallIn(CamelModel):
    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] | None = None


class ExpectedIn(CamelModel):
    output: Any = None
    contains: list[str] = Field(default_factory=list, max_length=MAX_STRINGS)
    not_contains: list[str] = Field(default_factory=list, max_length=MAX_STRINGS)
    regex: str | None = Field(None, max_length=2000)
    output_schema: dict[str, Any] | None = None
    tool_calls: list[ExpectedCallIn] | None = Field(None, max_length=100)
    tool_calls_order: Literal["exact", "in_order", "any_order"] = "in_order"
    source_doc_ids: list[str] | None = Field(None, max_length=1000)


class ChatInput(CamelModel):
    messages: list[InputMessage] = Field(min_length=1, max_length=1000)


class TaskInput(CamelModel):
    inputs: dict[str, Any]


class CaseIn(CamelModel):
    input: Any
    expected: ExpectedIn | None = None
    metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_string(cls, data: Any) -> Any:
        # A bare string is the one user message: the form a CSV column or a quick test takes.
        if isinstance(data, dict) and isinstance(data.get("input"), str):
            return {**data, "input": {"messages": [{"role": "user", "content": data["input"]}]}}
        return data


def case_check(data: Any, *, agent_type: str, loc: Loc) -> dict[str, Any]:
    """`data` as a case of a dataset of `agent_type`, as stored (camelCase, as on the
    wire). Raises Invalid at the bad field's path under `loc`."""
    case = parse(CaseIn, data, *loc)
    if agent_type in TASK_TYPES:
        stored_input = parse(TaskInput, case.input, *loc, "input").model_dump(mode="json")
    else:
        if isinstance(case.input, dict) and "inputs" in case.input:
            raise Invalid.at(
                (*loc, "input", "inputs"),
                f'a {agent_type} agent\'s case is {{"messages": [...]}} (or a string); '
                "`inputs` are a task agent's",
            )
        chat = parse(ChatInput, case.input, *loc, "input")
        stored_input = chat.model_dump(mode="json", by_alias=True, exclude_unset=True)
    stored: dict[str, Any] = {"input": stored_input}
    if case.expected is not None:
        _expected_check(case.expected, agent_type, (*loc, "expected"))
        stored["expected"] = case.expected.model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )
    if case.metadata is not None:
        stored["metadata"] = case.metadata
    return stored


def _expected_check(expected: ExpectedIn, agent_type: str, loc: Loc) -> None:
    if expected.regex is not None:
        try:
            re2.compile(expected.regex)
        except re2.error as exc:
            raise Invalid.at(
                (*loc, "regex"), f"not a regular expression (RE2 syntax): {exc}"
            ) from None
    if expected.output_schema is not None:
        try:
            schema_check(expected.output_schema)
        except SchemaRefused as exc:
            raise Invalid.at((*loc, "outputSchema", *exc.path), exc.message) from None
    if expected.tool_calls is not None and agent_type != "tool":
        raise Invalid.at((*loc, "toolCalls"), f"a {agent_type} agent calls no tools")
    if expected.source_doc_ids is not None and agent_type != "rag":
        raise Invalid.at((*loc, "sourceDocIds"), "only a RAG agent's answers have sources")


def expected_of(stored: dict[str, Any] | None) -> Expected:
    """A stored case's `expected`, as the scorers read it."""
    if not stored:
        return Expected()
    calls = stored.get("toolCalls")
    return Expected(
        output=stored.get("output"),
        contains=tuple(stored.get("contains", ())),
        not_contains=tuple(stored.get("notContains", ())),
        regex=stored.get("regex"),
        output_schema=stored.get("outputSchema"),
        tool_calls=None
        if calls is None
        else tuple(ExpectedCall(c["name"], c.get("arguments")) for c in calls),
        tool_calls_order=stored.get("toolCallsOrder", "in_order"),
        source_doc_ids=None
        if stored.get("sourceDocIds") is None
        else tuple(stored["sourceDocIds"]),
    )


def input_text(stored_input: dict[str, Any]) -> str:
    """A case's input as text: its last user message, or its inputs as JSON."""
    if "inputs" in stored_input:
        return json.dumps(stored_input["inputs"], ensure_ascii=False)
    messages = stored_input.get("messages", [])
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""
