"""The tool loop: model step ▸ tool calls (concurrently) ▸ results back ▸ repeat.

It ends when the model answers without tool calls, when a structured_output call
validates, when the model calls a client's tool, or as failed (`max_iterations`,
`structured_output_invalid`).

Client tools (`RunInput.client_tools`, /v1/openai's `tools`) are offered to the model
beside the agent's own, which run here. A step that calls any client tool ends the turn
with those calls (`ResponseCompleted.client_calls`), as an OpenAI completion ends with
`finish_reason: "tool_calls"`; the client runs them and sends the history back with their
results. The agent's own calls of that same step are *not* run: the client's history will
carry only the calls it was given, so a result of ours would reach no later model call,
and its tool's side effects would be spent for nothing (and spent again when the model,
seeing the client's results, asks for it once more). Dropping them keeps every call in
the history answered and every tool run one whose result the model reads.

A step's calls of tools that need a person's approval (agents.runtime.approvals) do not
run: the step's other calls do, and the turn ends with the gated ones as approval requests
and the state a decision resumes (`ResponseCompleted.paused`). Resumed, the approved calls
run, the rejected ones answer the model with the approver's words, and the loop goes on at
the next model call. Where the run cannot wait (`can_pause` off), a gated call is refused
to the model instead, and the turn goes on.

`tool_choice` applies to this turn's model calls: "none" offers the tools but drops any
call made anyway, "required" and a named function bind the first model call only (as one
OpenAI completion is one model call). A forced structured_output answer is the agent's
answer format, not a tool choice, and stays forced. `parallel_tool_calls: false` keeps
the first call of a step, whether or not the provider was able to be told.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from agents.configs import StructuredOutputTool, ToolAgentConfig
from agents.llm.base import Message, ModelRequest, ToolCallPart, ToolSpec
from agents.runtime.approvals import (
    PausedTurn,
    Resume,
    approval_request,
    needs_approval,
    refused_result,
    rejected_result,
)
from agents.runtime.depth import CallDepth
from agents.runtime.events import Event, ResponseCompleted, ToolCall, ToolResult
from agents.runtime.failures import FailureCode
from agents.runtime.guard import screen_context, withheld
from agents.runtime.model_step import StepResult, model_request, model_step
from agents.runtime.spec import AgentSpec, Meter, RunFailure, RunInput, ToolChoice
from agents.runtime.steps import (
    ApprovalDecisionStep,
    ApprovalRequestStep,
    ContextSource,
    ToolCallStep,
)
from agents.runtime.tools.base import Outcome, Tool, execute, schema_problems
from agents.runtime.tools.toolset import build_tools
from agents.runtime.trace import Trace, cut
from guardrails.engines.rules import Rule


async def run_tool_agent(
    spec: AgentSpec, run_input: RunInput, meter: Meter, depth: CallDepth
) -> AsyncIterator[Event]:
    config = spec.config
    assert isinstance(config, ToolAgentConfig)
    tools = await build_tools(spec, meter, depth, run_input)
    client = {t.name: t for t in run_input.client_tools}
    if clash := sorted(client.keys() & tools.keys()):
        raise RunFailure(
            FailureCode.INVALID_REQUEST,
            f"the client's tool {clash[0]} is named like one of the agent's",
        )
    offered = [t.spec for t in tools.values()] + list(client.values())
    choice = run_input.tool_choice
    if choice.mode == "function" and choice.name not in tools.keys() | client.keys():
        raise RunFailure(FailureCode.INVALID_REQUEST, f"tool_choice names no tool: '{choice.name}'")
    structured = next((t for t in config.tools if isinstance(t, StructuredOutputTool)), None)
    only_structured = structured is not None and len(config.tools) == 1
    answer_force = structured.name if only_structured and structured else None
    force = choice.name if choice.mode == "function" else answer_force
    messages = list(run_input.messages)
    retries = 0
    first = 0
    if (resume := run_input.resume) is not None:  # a paused turn, decided: go on from it
        turn = resume.turn
        messages, first, retries = list(turn.messages), turn.iteration, turn.retries
        meter.usage = turn.usage + meter.usage
        meter.model_calls += turn.model_calls
        async for event in _decided(tools, resume, messages, meter.trace, run_input.guardrails):
            yield event

    for iteration in range(first, config.max_iterations):
        step_choice = choice if iteration == 0 or choice.mode == "none" else ToolChoice()
        request = _request(
            config, messages, offered, force, step_choice, run_input.parallel_tool_calls
        )
        if choice.mode == "function":
            force = answer_force  # the named function binds the first model call only
        step = StepResult()
        async for delta in model_step(
            spec, request, meter, step, stream=request.force_tool is None
        ):
            yield delta
        if step_choice.mode == "none" and request.force_tool is None:
            step.tool_calls = []  # a provider that cannot be told "none" called anyway
        if not run_input.parallel_tool_calls:
            step.tool_calls = step.tool_calls[:1]
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
        if any(c.name in client for c in step.tool_calls):
            waiting = tuple(
                ToolCall(c.call_id, c.name, c.arguments)
                for c in step.tool_calls
                if c.name in client
            )
            for event in waiting:
                yield event
            yield ResponseCompleted(usage=meter.usage, text=step.text, client_calls=waiting)
            return
        for call in step.tool_calls:
            yield ToolCall(call.call_id, call.name, call.arguments)
        gated = [c for c in step.tool_calls if _gated(tools.get(c.name), c)]
        running = [c for c in step.tool_calls if c not in gated] if gated else step.tool_calls
        if not run_input.can_pause:  # refused to the model: nobody can approve them here
            running, gated = step.tool_calls, []
        outcomes = await _run_calls(
            tools, structured, running, meter.trace, run_input.guardrails, run_input.can_pause
        )
        for call, outcome in zip(running, outcomes, strict=True):
            yield ToolResult(call.call_id, call.name, outcome.content, outcome.is_error)
            messages.append(_result_message(call, outcome))
        if gated:  # the other calls ran; these wait for a person, and so does the turn
            requests = tuple(approval_request(call) for call in gated)
            for asked in requests:
                detail = ApprovalRequestStep(
                    asked.approval_request_id, asked.name, cut(asked.arguments)
                )
                meter.trace.start("approval_request").end("awaiting_approval", detail)
            paused = PausedTurn(
                tuple(messages), iteration + 1, retries, requests, meter.usage, meter.model_calls
            )
            yield ResponseCompleted(
                usage=meter.usage, text=step.text, approval_requests=requests, paused=paused
            )
            return
        if structured is not None and any(c.name == structured.name for c in step.tool_calls):
            retries += 1
            if retries > config.inference_config.max_retries:
                raise RunFailure(
                    FailureCode.STRUCTURED_OUTPUT_INVALID,
                    f"the model's structured output did not match the schema after {retries} tries",
                )
    raise RunFailure(
        FailureCode.MAX_ITERATIONS,
        f"the agent did not finish within {config.max_iterations} iterations",
    )


def _request(
    config: ToolAgentConfig,
    messages: list[Message],
    tools: list[ToolSpec],
    force: str | None,
    choice: ToolChoice,
    parallel: bool,
) -> ModelRequest:
    request = model_request(
        config,
        system=config.system_prompt,
        messages=messages,
        tools=tools,
        force_tool=force,
        purpose="chat",
    )
    mode = choice.mode if choice.mode in ("none", "required") else "auto"
    return replace(request, tool_choice=mode, parallel_tool_calls=parallel)


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


def _gated(tool: Tool | None, call: ToolCallPart) -> bool:
    return tool is not None and needs_approval(tool.approval, call.arguments)


def _result_message(call: ToolCallPart, outcome: Outcome) -> Message:
    return Message(
        "tool",
        outcome.content,
        tool_call_id=call.call_id,
        name=call.name,
        is_error=outcome.is_error,
    )


async def _decided(
    tools: dict[str, Tool],
    resume: Resume,
    messages: list[Message],
    trace: Trace,
    rules: Sequence[Rule],
) -> AsyncIterator[Event]:
    """A paused turn's calls, decided: the approved ones run (now, and only now), the
    rejected ones answer the model with the approver's words."""
    requests = resume.turn.requests
    decisions = [resume.decision(request) for request in requests]
    for request, decision in zip(requests, decisions, strict=True):
        detail = ApprovalDecisionStep(
            request.approval_request_id,
            request.name,
            "approve" if decision.approve else "reject",
            decision.by,
            decision.at,
            decision.message or None,
        )
        trace.start("approval_decision").end("completed", detail)
    approved = [
        ToolCallPart(r.call_id, r.name, r.arguments)
        for r, d in zip(requests, decisions, strict=True)
        if d.approve
    ]
    ran = iter(await _run_calls(tools, None, approved, trace, rules, can_pause=True, gate=False))
    for request, decision in zip(requests, decisions, strict=True):
        call = ToolCallPart(request.call_id, request.name, request.arguments)
        if decision.approve:
            outcome = next(ran)
        else:
            outcome = Outcome(rejected_result(request.name, decision), is_error=True)
        yield ToolResult(call.call_id, call.name, outcome.content, outcome.is_error)
        messages.append(_result_message(call, outcome))


async def _run_calls(
    tools: dict[str, Tool],
    structured: StructuredOutputTool | None,
    calls: list[ToolCallPart],
    trace: Trace,
    rules: Sequence[Rule],
    can_pause: bool,
    gate: bool = True,
) -> list[Outcome]:
    """The calls' outcomes. A gated call in a run that cannot pause (`gate`: its decision
    is not made yet) is refused, not run."""

    async def one(call: ToolCallPart) -> Outcome:
        if structured is not None and call.name == structured.name:
            return _structured_feedback(structured, call)
        tool = tools.get(call.name)
        step = trace.start("tool_call")
        if gate and not can_pause and _gated(tool, call):
            said = refused_result(call.name)
            arguments = cut(call.arguments)
            step.end("failed", ToolCallStep(call.name, arguments, error=said, call_id=call.call_id))
            return Outcome(said, is_error=True)
        with trace.within(step):
            outcome = await execute(tool, call.name, call.arguments)
        said, arguments = cut(outcome.content), cut(call.arguments)
        if outcome.is_error:
            step.end("failed", ToolCallStep(call.name, arguments, error=said, call_id=call.call_id))
        else:
            detail = ToolCallStep(call.name, arguments, result=said, call_id=call.call_id)
            step.end("completed", detail)
        return await _screened(outcome, call, rules, trace)

    return list(await asyncio.gather(*(one(c) for c in calls)))


async def _screened(
    outcome: Outcome, call: ToolCallPart, rules: Sequence[Rule], trace: Trace
) -> Outcome:
    """The outcome, or a notice in its place when a context-stage guardrail blocks it; the
    tool call's own step keeps what the tool said, for whoever reads the trace."""
    if outcome.is_error:  # our own words about a failed call, not the tool's text
        return outcome
    where = ContextSource("tool_result", tool=call.name, call_id=call.call_id)
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
