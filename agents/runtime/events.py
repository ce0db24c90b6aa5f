"""The closed set of events a run produces; every wire protocol encodes these.

Every stream starts with ResponseCreated and ends with exactly one of ResponseCompleted
or ResponseFailed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.llm.base import Usage


@dataclass(frozen=True)
class ResponseCreated:
    response_id: str
    model: str
    created_at: int  # epoch seconds


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # complete JSON object text


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ResponseCompleted:
    usage: Usage
    text: str = ""
    # The validated object of a structured answer (structured output, task output schema).
    structured: dict[str, Any] | None = None
    # A tool agent's structured_output answer *is* the object: the native API answers with
    # it alone (the source document's PersonExtractor). A task agent's stays a message.
    object_answer: bool = False
    custom_outputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResponseFailed:
    code: str
    message: str
    usage: Usage = field(default_factory=Usage)


Event = ResponseCreated | TextDelta | ToolCall | ToolResult | ResponseCompleted | ResponseFailed
