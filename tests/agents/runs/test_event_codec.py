"""The run event codec (agents.runs.event_codec): every event type of the closed set, with
every field set away from its default, round-trips through JSON text."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, cast

import pytest

from agents.llm.base import Usage
from agents.runs.event_codec import EVENT_TYPES, UnknownEvent, event_from_json, event_json
from agents.runtime.events import (
    Event,
    Intervention,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agents.runtime.failures import FailureCode
from agents.runtime.steps import Detected, MatchedText

CALL = ToolCall("call-1", "multiply", '{"a": 12, "b": 11}')
EXAMPLES: list[Event] = [
    ResponseCreated("resp_1", "calculator@3", 1_764_300_000),
    TextDelta("Zwölf × elf = "),
    TextDelta(""),
    CALL,
    ToolResult("call-1", "multiply", "132"),
    ToolResult("call-2", "divide", "division by zero", is_error=True),
    ResponseCompleted(Usage(12, 34), text="132"),
    ResponseCompleted(
        Usage(1, 2),
        text='{"name": "Ada"}',
        structured={"name": "Ada", "tags": ["x", 1, None]},
        object_answer=True,
        custom_outputs={"sourceNodes": [{"docId": "d1", "score": 0.5}]},
    ),
    ResponseCompleted(
        Usage(5, 0),
        text="leaked",
        intervention=Intervention("no-secrets", "output", "I cannot say that."),
    ),
    ResponseCompleted(
        Usage(5, 0),
        text="",
        intervention=Intervention(
            "HAIP-Prompt_attack-Medium",
            "input",
            "Sorry.",
            detected=Detected("override", "rules", 1.0, MatchedText(0, 6, "Ignore")),
        ),
    ),
    ResponseFailed("provider_timeout", "the model did not answer", Usage(7, 0)),
]


def _client_calls_example() -> list[Event]:
    # A field another part of the platform adds (client tools): read from the dataclass,
    # so the codec needs no change for it.
    if "client_calls" not in {f.name for f in dataclasses.fields(ResponseCompleted)}:
        return []
    return [ResponseCompleted(Usage(3, 4), text="", **{"client_calls": (CALL,)})]


@pytest.mark.parametrize("event", EXAMPLES + _client_calls_example(), ids=repr)
def test_every_event_round_trips_through_json_text(event: Event) -> None:
    stored = json.loads(json.dumps(event_json(event)))

    assert event_from_json(stored) == event
    assert type(event_from_json(stored)) is type(event)


def test_the_examples_cover_the_closed_set() -> None:
    assert set(EVENT_TYPES) == set(typing.get_args(Event))
    assert {type(e) for e in EXAMPLES} == set(EVENT_TYPES)


def test_the_stored_shape_names_the_type_in_snake_case() -> None:
    assert event_json(TextDelta("hi")) == {"type": "text_delta", "text": "hi"}
    assert event_json(ResponseFailed("x", "y"))["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
    }


def test_a_field_the_writer_did_not_know_takes_its_default() -> None:
    older: dict[str, Any] = {"type": "tool_result", "call_id": "c", "name": "n", "content": "1"}

    assert event_from_json(older) == ToolResult("c", "n", "1", is_error=False)


def test_an_unknown_type_is_refused() -> None:
    with pytest.raises(UnknownEvent):
        event_from_json({"type": "response_paused"})


def test_a_failures_code_reads_back_as_its_member() -> None:
    stored = event_json(ResponseFailed(FailureCode.CANCELED, "the run was canceled"))
    assert cast(ResponseFailed, event_from_json(stored)).code is FailureCode.CANCELED
    # One another version wrote and this one does not know: an internal error, read.
    later = {**stored, "code": "budget_exceeded_someday"}
    assert cast(ResponseFailed, event_from_json(later)).code is FailureCode.INTERNAL_ERROR
