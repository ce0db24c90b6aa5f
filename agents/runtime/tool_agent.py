"""The tool loop: model step ▸ tool calls (concurrently) ▸ results back ▸ repeat.

It ends when the model answers without tool calls, when a structured_output call
validates, or as failed (`max_iterations`, `structured_output_invalid`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents.configs import StructuredOutputTool, ToolAgentConfig
from agents.llm.base import Message, ModelRequest, ToolCallPart
from agents.runtime.events import Event, ResponseCompleted, ToolCall, ToolResult
from agents.runtime.guard import screen_context, withheld
from agents.runtime.model_step import StepResult, model_request, model_step
from agents.runtime.spec import AgentSpec, Meter, RunFailure, RunInput
from agents.runtime.tools.base import Outcome, Tool, execute, schema_problems
from agents.runtime.tools.toolset import build_tools
from agents.runtime.trace import Trace, cut
from guardrails.engines.rules import Rule


async def run_tool_agent(
    spec: AgentSpec, run_input: RunInput, meter: Meter, depth: int
) -> AsyncIterator[Event]:
    config = spec.config
    assert isinstance(config, ToolAgentConfig)
    tools = await build_tools(spec, meter, depth, run_input)
    structured = next((t for t in config.tools if isinstance(t, StructuredOutputTool)), None)
    only_structured = structured is not None and len(config.tools) == 1
    force = structured.name if only_structured and structured else None
    messages = list(run_input.messages)
    retries = 0

    for _ in range(config.max_iterations):
        request = _request(spec, config, messages, tools, force)
        step = StepResult()
        async for delta in model_step(spec, request, meter, step, stream=force is None):
            yield delta
        if not step.tool_calls:
            if structured is not None and force is None:
                force = structured.name  # the answer must come through structured_output
                messages.append(Message("assistant", step.text))
                messages.append(
                    Message("user", "Give your answer with the structured_output tool.")
                )
                continue
            yield ResponseCompleted(usage=meter.usage, text=step.text)
            return

        messages.append(Message("assistant", step.text, tuple(step.tool_calls)))
        answer = _structured_answer(structured, step.tool_calls)
        if answer is not None:
            yield ToolCall(answer[0].call_id, answer[0].name, answer[0].arguments)
            yield ResponseCompleted(usage=meter.usage, structured=answer[1], object_answer=True)
            return
        for call in step.tool_calls:
            yield ToolCall(call.call_id, call.name, call.arguments)
        outcomes = await _run_calls(
            tools, structured, step.tool_calls, meter.trace, run_input.guardrails
        )
        for call, outcome in zip(step.tool_calls, outcomes, strict=True):
            yield ToolResult(call.call_id, call.name, outcome.content, outcome.is_error)
            messages.append(
                Message(
                    "tool",
                    outcome.content,
                    tool_call_id=call.call_id,
                    name=call.name,
                    is_error=outcome.is_error,
                )
            )
        if structured is not None and any(c.name == structured.name for c in step.tool_calls):
            retries += 1
            if retries > config.inference_config.max_retries:
                raise RunFailure(
                    "structured_output_invalid",
                    f"the model's structured output did not match the schema after {retries} tries",
                )
    raise RunFailure(
        "max_iterations", f"the agent did not finish within {config.max_iterations} iterations"
    )


def _request(
    spec: AgentSpec,
    config: ToolAgentConfig,
    messages: list[Message],
    tools: dict[str, Tool],
    force: str | None,
) -> ModelRequest:
    return model_request(
        config,
        system=config.system_prompt,
        messages=messages,
        tools=(t.spec for t in tools.values()),
        force_tool=force,
        purpose="chat",
    )


def _structured_answer(
    structured: StructuredOutputTool | None, calls: list[ToolCallPart]
) -> tuple[ToolCallPart, dict[str, Any]] | None:
    """The first structured_output call whose arguments validate, with its object."""
    if structured is None:
        return None
    for call in calls:
        if call.name != structured.name:
            continue
        try:
            value = json.loads(call.arguments)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and not schema_problems(value, structured.output_schema):
            return call, value
    return None


async def _run_calls(
    tools: dict[str, Tool],
    structured: StructuredOutputTool | None,
    calls: list[ToolCallPart],
    trace: Trace,
    rules: Sequence[Rule],
) -> list[Outcome]:
    async def one(call: ToolCallPart) -> Outcome:
        if structured is not None and call.name == structured.name:
            return _structured_feedback(structured, call)
        step = trace.start("tool_call")
        with trace.within(step):
            outcome = await execute(tools.get(call.name), call.name, call.arguments)
        said = {"error" if outcome.is_error else "result": cut(outcome.content)}
        status = "failed" if outcome.is_error else "completed"
        step.end(status, name=call.name, arguments=cut(call.arguments), **said)
        return await _screened(outcome, call, rules, trace)

    return list(await asyncio.gather(*(one(c) for c in calls)))


async def _screened(
    outcome: Outcome, call: ToolCallPart, rules: Sequence[Rule], trace: Trace
) -> Outcome:
    """The outcome, or a notice in its place when a context-stage guardrail blocks it; the
    tool call's own step keeps what the tool said, for whoever reads the trace."""
    if outcome.is_error:  # our own words about a failed call, not the tool's text
        return outcome
    where = {"source": "tool_result", "tool": call.name, "callId": call.call_id}
    [rule] = await screen_context(rules, [(outcome.content, where)], trace, "REPLACED")
    if rule is None:
        return outcome
    return Outcome(withheld(call.name, rule), is_error=True)


def _structured_feedback(structured: StructuredOutputTool, call: ToolCallPart) -> Outcome:
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError as exc:
        return Outcome(f"not valid JSON: {exc.msg}; call the tool again", is_error=True)
    problems = schema_problems(value, structured.output_schema)
    return Outcome(
        "the object does not match the schema: " + "; ".join(problems) + ". Call the tool again.",
        is_error=True,
    )
