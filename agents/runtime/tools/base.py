"""Tools as the tool loop sees them: a spec for the model and an async call.

Whatever goes wrong inside a tool (bad JSON, arguments that miss the schema, an exception)
comes back as an error result the model can read; it never ends the run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents import json_schemas
from agents.configs import ApprovalPolicy
from agents.llm.base import ToolSpec


@dataclass(frozen=True)
class Outcome:
    content: str
    is_error: bool = False
    value: Any = None  # the parsed result, when a caller needs more than text


class ToolFailure(Exception):
    """Raised by a tool to report an error to the model with this exact message."""


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    call: Callable[[dict[str, Any]], Awaitable[Outcome]]
    # Whether a person approves a call first (agents.runtime.approvals); None: never.
    approval: ApprovalPolicy | None = None


def parse_arguments(raw: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments object of a call; raises ToolFailure saying what is wrong with it."""
    text = raw.strip() or "{}"  # some models send "" for a call without arguments
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolFailure(
            f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
        ) from None
    if not isinstance(arguments, dict):
        raise ToolFailure("arguments must be a JSON object")
    problems = schema_problems(arguments, schema)
    if problems:
        raise ToolFailure("arguments do not match the schema: " + "; ".join(problems))
    return arguments


def schema_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every violation of `schema` by `value`, each with its JSON path. Raises ToolFailure
    when the schema itself cannot be used (an MCP server's, read at run time, may `$ref`
    an address: it is refused, never fetched)."""
    try:
        found = json_schemas.errors(value, schema)
    except json_schemas.SchemaRefused as exc:
        at = f" at {exc.where}" if exc.path else ""
        raise ToolFailure(f"the tool's schema cannot be used{at}: {exc.message}") from None
    return [f"{e.json_path}: {e.message}" for e in found]


def render_result(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # "15", not "15.0", for the model and the reader
    return json.dumps(value, default=str)


def function_tool(spec: ToolSpec, func: Callable[..., Any]) -> Tool:
    """A Tool over a registered Python function (sync ones run in a worker thread)."""

    async def call(arguments: dict[str, Any]) -> Outcome:
        if inspect.iscoroutinefunction(func):
            value = await func(**arguments)
        else:
            value = await asyncio.to_thread(func, **arguments)
        return Outcome(render_result(value), value=value)

    return Tool(spec, call)


async def execute(tool: Tool | None, name: str, raw_arguments: str) -> Outcome:
    """Run one call and turn every failure into an error Outcome."""
    if tool is None:
        return Outcome(f"unknown tool '{name}'", is_error=True)
    try:
        arguments = parse_arguments(raw_arguments, tool.spec.parameters)
        return await tool.call(arguments)
    except ToolFailure as exc:
        return Outcome(str(exc), is_error=True)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool's bug must not end the run: the model is told
        return Outcome(f"{name} failed: {exc}", is_error=True)
