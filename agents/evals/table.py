"""A dataset's case as a row of the admin's case table (agents/evals/admin.py), and a row
as a case again: each field of a case (docs/api.md#datasets) a text a person edits in a
cell. Strings and lists of strings read as plain text (one item a line); the rest as JSON.

A row's problems are raised at `("row", <field>)`, and `row_field` says which field a case's
error path (from agents.evals.cases.case_check) names, so the page shows each at its cell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentbuilder.errors import Invalid, Loc
from agents.runs.request import TASK_TYPES

ROW_FIELDS = (
    "input",
    "output",
    "contains",
    "notContains",
    "regex",
    "toolCalls",
    "more",
    "metadata",
)
# What `expected` holds beyond the table's own columns: one JSON object in "more".
MORE_KEYS = ("outputSchema", "toolCallsOrder", "sourceDocIds")
LINES = ("contains", "notContains")


def row_of(case: Mapping[str, Any]) -> dict[str, str]:
    """The texts of the row of `case`, in its stored (or wire) form."""
    expected = case.get("expected") or {}
    more = {k: expected[k] for k in MORE_KEYS if k in expected}
    return {
        "input": _input_text(case.get("input") or {}),
        "output": output_text(expected.get("output")),
        "contains": "\n".join(expected.get("contains", ())),
        "notContains": "\n".join(expected.get("notContains", ())),
        "regex": expected.get("regex") or "",
        "toolCalls": _calls_text(expected.get("toolCalls")),
        "more": _json(more) if more else "",
        "metadata": _json(case["metadata"]) if case.get("metadata") else "",
    }


def case_of(row: Mapping[str, Any], *, agent_type: str) -> dict[str, Any]:
    """The case (wire form) a row's texts say, for a dataset of `agent_type`; its shape is
    the services' to check. Raises Invalid at ("row", field) for a text that reads as none."""
    text = {name: _text(row, name) for name in ROW_FIELDS}
    expected: dict[str, Any] = {}
    if text["output"].strip():
        expected["output"] = output_of(text["output"])
    for name in LINES:
        items = [line for line in text[name].splitlines() if line.strip()]
        if items:
            expected[name] = items
    if text["regex"]:
        expected["regex"] = text["regex"]
    if text["toolCalls"].strip():
        expected["toolCalls"] = _calls_of(text["toolCalls"])
    if text["more"].strip():
        more = _object(text["more"], "more")
        taken = sorted(set(more) - set(MORE_KEYS))
        if taken:
            raise Invalid.at(
                ("row", "more"), f"'{taken[0]}': here only {', '.join(MORE_KEYS)} (JSON)"
            )
        expected.update(more)
    case: dict[str, Any] = {"input": _input_of(text["input"], agent_type)}
    if expected:
        case["expected"] = expected
    if text["metadata"].strip():
        case["metadata"] = _object(text["metadata"], "metadata")
    return case


def row_field(loc: Loc) -> str | None:
    """The row's field that a case's error path names (after its prefix: "body", "row",
    a case's index), or None when the error is the whole row's."""
    rest = list(loc)
    while rest and (rest[0] in ("body", "row", "file") or isinstance(rest[0], int)):
        rest.pop(0)
    if not rest:
        return None
    if rest[0] in ("input", "metadata"):
        return str(rest[0])
    if rest[0] != "expected" or len(rest) < 2:
        return None
    key = str(rest[1])
    return key if key in ROW_FIELDS else "more"


def output_text(output: Any) -> str:
    """An expected output (or an answer) as a person edits it: a string as it is."""
    if output is None:
        return ""
    return output if isinstance(output, str) else _json(output)


def output_of(text: str) -> Any:
    """An edited expected output: a JSON object or array (a structured answer), else the
    text itself."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
        if isinstance(value, dict | list):
            return value
    return text


def _input_text(stored: Mapping[str, Any]) -> str:
    if "inputs" in stored:
        return _json(stored["inputs"])
    messages = stored.get("messages") or []
    if len(messages) == 1 and messages[0].get("role") == "user":
        content = messages[0].get("content")
        if isinstance(content, str) and not _looks_like_json(content):
            return content  # the common case: one question
    return _json(messages)


def _input_of(text: str, agent_type: str) -> Any:
    if agent_type in TASK_TYPES:
        return {"inputs": _object(text, "input")}
    if not text.strip():
        raise Invalid.at(("row", "input"), "type the user's message (or a JSON array of messages)")
    if _looks_like_json(text):
        try:
            return {"messages": json.loads(text)}
        except ValueError as exc:
            raise Invalid.at(("row", "input"), f"not valid JSON: {exc}") from None
    return text  # one user message


def _calls_text(calls: Any) -> str:
    if calls is None:
        return ""
    if calls and all(isinstance(c, dict) and set(c) == {"name"} for c in calls):
        return "\n".join(c["name"] for c in calls)  # names only: one a line
    return _json(calls)


def _calls_of(text: str) -> Any:
    if text.strip().startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise Invalid.at(("row", "toolCalls"), f"not valid JSON: {exc}") from None
    return [{"name": line.strip()} for line in text.splitlines() if line.strip()]


def _object(text: str, field: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Invalid.at(("row", field), f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Invalid.at(("row", field), "a JSON object")
    return value


def _text(row: Mapping[str, Any], name: str) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid.at(("row", name), "a text")
    return value.replace("\r\n", "\n")


def _looks_like_json(text: str) -> bool:
    return text.strip()[:1] == "["


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
