"""The streaming output guard on its own: windows, word boundaries, what is released."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agents.llm.base import Usage
from agents.runtime.events import Event, ResponseCompleted, TextDelta, ToolCall
from agents.runtime.guard import Guard, detected, guard_output, release_point
from agents.runtime.spec import Meter
from agents.runtime.steps import Detected, MatchedText
from guardrails.engines.base import Span, Verdict
from guardrails.engines.local import LocalEngine
from guardrails.engines.rules import Rule
from tests.support.scripted import WordDetector, rule


async def source(*events: Event, closed: list[bool] | None = None) -> AsyncIterator[Event]:
    try:
        for event in events:
            yield event
    finally:
        if closed is not None:
            closed.append(True)


def deltas(*texts: str) -> list[Event]:
    return [TextDelta(t) for t in texts]


def run_guard(guard: Guard, *events: Event, closed: list[bool] | None = None) -> list[Event]:
    async def collect() -> list[Event]:
        stream = source(*events, closed=closed)
        return [e async for e in guard_output(stream, guard, Meter())]

    return asyncio.run(collect())


def text_of(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


DONE = ResponseCompleted(usage=Usage(1, 1), text="")


@pytest.mark.parametrize(
    ("held", "window", "cut"),
    [
        ("Hello world", 200, 0),  # no sentence end yet, under the window
        ("Hello. Wor", 200, 7),  # through the sentence end and its space
        ("Pi is 3.14 and", 200, 0),  # a decimal point is no sentence end
        ("One. Two! Three? Fo", 200, 17),  # through the last end
        ("line one\nline", 200, 9),
        ("abcdef ghijkl mnop", 10, 7),  # past the window: back to the last word boundary
        ("abcdefghijklmnop", 10, 10),  # one long word: cut at the window
    ],
)
def test_release_point(held: str, window: int, cut: int) -> None:
    assert release_point(held, window) == cut


def test_a_clean_stream_is_released_whole_and_in_order() -> None:
    guard = Guard([rule(WordDetector("darn"))])
    events = run_guard(guard, *deltas("The sky ", "is blue. ", "Grass is ", "green."), DONE)
    assert "".join(text_of(events)) == "The sky is blue. Grass is green."
    assert events[-1] is DONE


def test_a_word_split_across_deltas_is_checked_whole_and_never_released() -> None:
    detector = WordDetector("darn")
    closed: list[bool] = []
    events = run_guard(
        Guard([rule(detector)]),
        *deltas("Fine. It is da", "rn bad. ", "More."),
        DONE,
        closed=closed,
    )
    released = text_of(events)
    assert released == ["Fine. ", "no (out)"]
    assert not any("da" in t for t in released[:-1])
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    assert last.custom_outputs == {  # no span: the word never reaches the client
        "guardrail": {
            "action": "BLOCKED",
            "name": "Words",
            "stage": "output",
            "detected": {"kind": "custom_word", "detector": "words", "score": 1.0},
        }
    }
    assert closed == [True]  # the model's stream was stopped


def test_each_window_is_checked_with_the_tail_of_the_released_text() -> None:
    detector = WordDetector("dar n")  # a "phrase" straddling two windows
    events = run_guard(Guard([rule(detector)], window=8), *deltas("aaaa dar ", "nope."), DONE)
    assert text_of(events)[-1] == "no (out)"


def test_tool_call_arguments_are_checked_before_they_are_shown() -> None:
    call = ToolCall("c1", "shout", '{"word": "darn"}')
    events = run_guard(Guard([rule(WordDetector("darn"))]), *deltas("Calling. "), call, DONE)
    assert not [e for e in events if isinstance(e, ToolCall)]
    assert text_of(events) == ["Calling. ", "no (out)"]


def test_input_only_rules_leave_the_output_alone() -> None:
    detector = WordDetector("darn")
    events = run_guard(Guard([rule(detector, ("input",))]), *deltas("darn. "), DONE)
    assert text_of(events) == ["darn. "]
    assert detector.seen == []


def test_input_check_names_the_first_blocking_rule() -> None:
    first, second = WordDetector("x"), WordDetector("darn")
    guard = Guard(
        [
            rule(first),
            Rule("Second", LocalEngine(second), frozenset({"input"}), "second says no", ""),
        ]
    )
    block = asyncio.run(guard.check(["hello", "oh darn"], "input"))
    assert block is not None
    assert (block.name, block.message, block.stage) == ("Second", "second says no", "input")
    assert asyncio.run(guard.check(["hello"], "input")) is None


def test_an_input_block_quotes_what_it_matched_in_the_message_that_matched() -> None:
    guard = Guard([rule(WordDetector("darn"))])
    block = asyncio.run(guard.check(["hello", "oh darn it"], "input"))
    assert block is not None
    assert block.detected == Detected("custom_word", "words", 1.0, MatchedText(3, 7, "darn"))
    assert block.custom_outputs()["guardrail"] == {
        "action": "BLOCKED",
        "name": "Words",
        "stage": "input",
        "detected": {
            "kind": "custom_word",
            "detector": "words",
            "score": 1.0,
            "span": {"start": 3, "end": 7, "text": "darn"},
        },
    }


def test_a_long_match_is_quoted_cut_at_200_characters_with_its_true_end() -> None:
    text = "ignore " * 100
    found = Verdict("BLOCKED", 0.8, kind="override", detector="rules", match=Span(0, 700))
    quoted = detected(found, text, "input")
    assert quoted.span is not None
    assert (quoted.span.start, quoted.span.end) == (0, 700)
    assert quoted.span.text == text[:199] + "…"
    assert detected(found, text, "output").span is None  # the client never saw it
    assert detected(found, text, "context").kind == "indirect"
