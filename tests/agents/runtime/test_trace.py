"""A run's trace on its own: cutting at 4 KB, start order, unfinished steps, and a guard
that records only the checks that intervened."""

from __future__ import annotations

import asyncio

from agents.runtime.guard import Guard
from agents.runtime.steps import (
    ContextSource,
    GuardrailStep,
    ModelCallStep,
    ToolCallStep,
    step_json,
)
from agents.runtime.trace import MAX_BYTES, Trace, cut
from tests.support.scripted import WordDetector, rule


def test_cut_keeps_short_text_and_never_splits_a_character() -> None:
    assert cut("15") == "15"
    long = "é" * 3000  # two bytes each
    assert cut(long) == "é" * (MAX_BYTES // 2)
    assert cut("a" + long).encode() == ("a" + "é" * (MAX_BYTES // 2 - 1)).encode()


def test_steps_keep_their_start_order_and_an_unfinished_one_is_canceled() -> None:
    trace = Trace()
    first = trace.start("tool_call", ToolCallStep("slow", "{}"))
    second = trace.start("tool_call", ToolCallStep("fast", "{}"))
    trace.start("model_call", ModelCallStep("m", {}))
    second.end("completed", ToolCallStep("fast", "{}", result="2"))
    first.end("failed", ToolCallStep("slow", "{}", error="boom"))
    first.end("completed", ToolCallStep("slow", "{}", result="late"))  # a step ends once

    steps = trace.steps
    assert [(s["type"], s.get("name"), s["status"]) for s in steps] == [
        ("tool_call", "slow", "failed"),
        ("tool_call", "fast", "completed"),
        ("model_call", None, "canceled"),
    ]
    assert steps[0]["error"] == "boom"
    assert steps[2]["model"] == "m"
    assert all(s["latencyMs"] >= 0 and s["startedAt"].endswith("Z") for s in steps)


def test_the_guard_traces_only_the_check_that_blocked() -> None:
    trace = Trace()
    guard = Guard([rule(WordDetector("secret"))], trace=trace)
    assert asyncio.run(guard.check(["all clear"], "input")) is None
    assert trace.steps == []

    assert asyncio.run(guard.check(["the secret"], "output")) is not None
    [step] = trace.steps
    assert {k: step[k] for k in ("type", "status", "name", "stage", "action")} == {
        "type": "guardrail",
        "status": "completed",
        "name": "Words",
        "stage": "output",
        "action": "BLOCKED",
    }


def test_a_step_is_written_in_camel_case_without_what_it_did_not_report() -> None:
    source = ContextSource("tool_result", tool="lookup", call_id="c1")
    assert step_json(GuardrailStep("Injection", "context", "REPLACED", source)) == {
        "name": "Injection",
        "stage": "context",
        "action": "REPLACED",
        "source": "tool_result",
        "tool": "lookup",
        "callId": "c1",
    }
    # A model call reports no first token and no price as null: it had none. An error only
    # a failed call has.
    assert step_json(ModelCallStep("m", {"input_tokens": 1})) == {
        "model": "m",
        "tokensUsage": {"input_tokens": 1},
        "timeToFirstTokenMs": None,
        "stopReason": None,
        "costUsd": None,
    }
    failed = ModelCallStep("m", {}, error="ThrottlingException: slow down")
    assert step_json(failed)["error"] == "ThrottlingException: slow down"
