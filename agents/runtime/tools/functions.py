"""The function registry: typed Python functions the `function` tool type can call.

`@function_tool` turns a typed function into a tool: its name, the first line of its
docstring as the description the model reads, and a JSON Schema of its parameters built
by pydantic from the type hints.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ConfigDict, create_model


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any]


REGISTRY: dict[str, FunctionSpec] = {}


def function_tool(func: Callable[..., Any]) -> Callable[..., Any]:
    """Register `func` under its own name; its type hints become the parameter schema."""
    REGISTRY[func.__name__] = FunctionSpec(
        name=func.__name__,
        description=(inspect.getdoc(func) or func.__name__).splitlines()[0],
        parameters=_parameters_schema(func),
        func=func,
    )
    return func


def _parameters_schema(func: Callable[..., Any]) -> dict[str, Any]:
    hints = inspect.get_annotations(func, eval_str=True)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, Any), default)
    model = create_model(f"{func.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    schema: dict[str, Any] = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def function_names() -> set[str]:
    return set(REGISTRY)


# ---------------------------------------------------------------- built-ins


@function_tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers (a × b) and return the product."""
    return a * b


@function_tool
def add(a: float, b: float) -> float:
    """Add two numbers (a + b) and return the sum."""
    return a + b


@function_tool
def subtract(a: float, b: float) -> float:
    """Subtract b from a (a − b) and return the difference."""
    return a - b


@function_tool
def divide(a: float, b: float) -> float:
    """Divide a by b (a / b) and return the quotient; b must not be zero."""
    if b == 0:
        raise ValueError("division by zero: b must not be 0")
    return a / b


@function_tool
def current_time(timezone: str = "UTC") -> str:
    """Return the current date and time in ISO 8601 for an IANA time zone such as Europe/Paris."""
    try:
        zone = ZoneInfo(timezone)
    # OSError: with the `tzdata` package installed, a key too long for a file name fails
    # opening it rather than finding nothing.
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {timezone!r}") from exc
    return datetime.now(UTC).astimezone(zone).isoformat(timespec="seconds")
