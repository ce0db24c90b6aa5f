"""One model call and its fallback models (docs/api.md#fallback-models), in the runtime on its
own: scripted providers, no database, no HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from agents.llm.base import Message, ProviderError, TextChunk, Usage
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed, TextDelta
from agents.runtime.pricing import Price
from agents.runtime.spec import AgentSpec, FallbackModel, Meter, RunInput
from guardrails.detectors.registry import detector_for
from guardrails.engines.local import LocalEngine
from guardrails.engines.rules import Rule
from tests.support.scripted import ScriptedProvider, answer, call, done, function, tool_agent

THROTTLED = ProviderError("ThrottlingException: Too many requests")
DOWN = ProviderError("ServiceUnavailableException: try later")
LATE = ProviderError("did not answer in time", timeout=True)
REFUSED = ProviderError("ValidationException: bad input", fallback_ok=False)


def spec(primary: ScriptedProvider, *fallbacks: tuple[str, ScriptedProvider]) -> AgentSpec:
    return AgentSpec(
        "agent",
        "tool",
        tool_agent(function("multiply")),
        primary,
        "primary-model",
        price=Price(1.0, 1.0),
        fallbacks=tuple(
            FallbackModel(model, provider, "scripted", Price(2.0, 2.0))
            for model, provider in fallbacks
        ),
    )


class Gate:
    """A spend gate that counts what it is asked and told."""

    def __init__(self) -> None:
        self.before = 0
        self.after: list[tuple[str, Usage, float | None]] = []

    async def before_call(self) -> None:
        self.before += 1

    async def after_call(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        self.after.append((model, usage, cost_usd))


def execute(agent: AgentSpec, gate: Gate | None = None) -> tuple[list[Event], list[dict[str, Any]]]:
    meter = Meter()

    async def collect() -> list[Event]:
        run_input = RunInput((Message("user", "Go"),), spend=gate)
        return [e async for e in run(agent, run_input, meter=meter)]

    events = asyncio.run(collect())
    return events, meter.trace.steps


def calls(steps: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(s["model"], s["status"], s.get("error")) for s in steps if s["type"] == "model_call"]


def test_a_throttled_model_falls_back_to_the_next_which_answers() -> None:
    primary = ScriptedProvider([THROTTLED])
    second = ScriptedProvider([DOWN])
    third = ScriptedProvider(answer("From the third."))

    events, steps = execute(spec(primary, ("second", second), ("third", third)))

    assert isinstance(events[-1], ResponseCompleted)
    assert events[-1].text == "From the third."
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["From the third."]
    assert calls(steps) == [
        ("primary-model", "failed", str(THROTTLED)),
        ("second", "failed", str(DOWN)),
        ("third", "completed", None),
    ]
    # Each model is asked for by its own id, with the same conversation.
    assert second.requests[0].model_id == "second"
    assert third.requests[0].model_id == "third"
    assert third.requests[0].messages == primary.requests[0].messages


def test_the_answering_model_is_priced_at_its_own_price_and_the_gate_sees_one_call() -> None:
    gate = Gate()
    primary = ScriptedProvider([LATE])
    second = ScriptedProvider([TextChunk("Hi."), done(tokens=(1_000_000, 0))])

    events, steps = execute(spec(primary, ("second", second)), gate)

    assert isinstance(events[-1], ResponseCompleted)
    failed, answered = [s for s in steps if s["type"] == "model_call"]
    assert failed["costUsd"] is None
    assert failed["tokensUsage"]["total_tokens"] == 0
    assert answered["costUsd"] == 2.0  # a million input tokens at the fallback's 2 USD
    assert gate.before == 1
    assert gate.after == [("second", Usage(1_000_000, 0), 2.0)]


def test_a_refused_request_is_not_sent_to_another_model() -> None:
    second = ScriptedProvider(answer("never"))

    events, steps = execute(spec(ScriptedProvider([REFUSED]), ("second", second)))

    assert isinstance(events[-1], ResponseFailed)
    assert events[-1].code == "provider_error"
    assert events[-1].message == str(REFUSED)
    assert second.requests == []
    assert calls(steps) == [("primary-model", "failed", str(REFUSED))]


def test_once_text_was_streamed_the_error_ends_the_run() -> None:
    primary = ScriptedProvider([TextChunk("Half an ans"), DOWN])
    second = ScriptedProvider(answer("never"))

    events, steps = execute(spec(primary, ("second", second)))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Half an ans"]
    assert isinstance(events[-1], ResponseFailed)
    assert events[-1].message == str(DOWN)
    assert second.requests == []
    assert calls(steps) == [("primary-model", "failed", str(DOWN))]


def test_when_every_model_fails_the_run_fails_with_the_last_error_and_every_attempt() -> None:
    fallbacks = (("second", ScriptedProvider([DOWN])), ("third", ScriptedProvider([LATE])))

    events, steps = execute(spec(ScriptedProvider([THROTTLED]), *fallbacks))

    last = events[-1]
    assert isinstance(last, ResponseFailed)
    assert (last.code, last.message) == ("provider_timeout", str(LATE))
    assert calls(steps) == [
        ("primary-model", "failed", str(THROTTLED)),
        ("second", "failed", str(DOWN)),
        ("third", "failed", str(LATE)),
    ]


def test_a_refusal_by_a_fallback_ends_the_tries_there() -> None:
    third = ScriptedProvider(answer("never"))
    fallbacks = (("second", ScriptedProvider([REFUSED])), ("third", third))

    events, steps = execute(spec(ScriptedProvider([THROTTLED]), *fallbacks))

    assert isinstance(events[-1], ResponseFailed)
    assert events[-1].message == str(REFUSED)
    assert third.requests == []
    assert [model for model, _, _ in calls(steps)] == ["primary-model", "second"]


def test_each_model_call_of_a_run_starts_again_from_the_versions_model() -> None:
    # The primary fails once, then answers the tool loop's second call itself.
    primary = ScriptedProvider([THROTTLED], answer("Second call, primary."))
    second = ScriptedProvider([call("multiply", '{"a": 2, "b": 3}'), done("tool_use")])

    events, steps = execute(spec(primary, ("second", second)))

    assert isinstance(events[-1], ResponseCompleted)
    assert calls(steps) == [
        ("primary-model", "failed", str(THROTTLED)),
        ("second", "completed", None),
        ("primary-model", "completed", None),
    ]


def _asked_streams(run_input: RunInput, *steps: Any) -> list[bool]:
    """Whether each model call of a run of `run_input` asked its provider for a stream."""
    provider = ScriptedProvider(*steps)

    async def collect() -> None:
        async for _ in run(spec(provider), run_input):
            pass

    asyncio.run(collect())
    return [request.stream for request in provider.requests]


def test_a_call_asks_for_a_stream_only_when_something_reads_its_deltas() -> None:
    ask = (Message("user", "Go"),)
    steps = ([call("multiply", '{"a": 3, "b": 5}'), done("tool_use")], answer("15."))
    whole = RunInput(ask, stream=False)
    profanity = LocalEngine(detector_for("profanity", {}))
    screened = Rule("Screen", profanity, frozenset({"output"}), "", "")

    assert _asked_streams(RunInput(ask), *steps) == [True, True]
    assert _asked_streams(whole, *steps) == [False, False]
    # An output guardrail screens the text as it streams: the calls stay streamed.
    assert _asked_streams(dataclasses.replace(whole, guardrails=(screened,)), *steps) == [
        True,
        True,
    ]
