"""`run(spec, input)`: one invocation as an async stream of events.

The service resolves everything from the database first (config, provider, task agents)
and records the run from these events afterwards; nothing here touches the ORM, so a
stream holds no database connection.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from agents.llm.base import ProviderError
from agents.runtime.depth import CallDepth
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agents.runtime.failures import FailureCode
from agents.runtime.guard import Guard, blocked_events, guard_output
from agents.runtime.rag_agent import run_rag_agent
from agents.runtime.spec import AgentSpec, Meter, RunFailure, RunInput
from agents.runtime.task_agent import run_task_agent
from agents.runtime.tool_agent import run_tool_agent

logger = logging.getLogger(__name__)

Flow = Callable[[AgentSpec, RunInput, Meter, CallDepth], AsyncIterator[Event]]

FLOWS: dict[str, Flow] = {"tool": run_tool_agent, "task": run_task_agent, "rag": run_rag_agent}


def new_response_id() -> str:
    return f"resp_{uuid.uuid4().hex}"


async def run(
    spec: AgentSpec,
    run_input: RunInput,
    *,
    response_id: str | None = None,
    meter: Meter | None = None,
) -> AsyncGenerator[Event, None]:
    """Stream a run: ResponseCreated, deltas, tool calls and results, then exactly one of
    ResponseCompleted or ResponseFailed."""
    meter = meter or Meter()
    meter.spend = run_input.spend
    yield ResponseCreated(response_id or new_response_id(), spec.model, int(time.time()))
    guard = Guard(run_input.guardrails, run_input.guard_window, meter.trace)
    # An output guardrail screens the text in windows as it streams, and its block stops
    # the model there: its runs keep their model calls streamed.
    meter.deltas = run_input.stream or bool(guard.output_rules)
    try:
        # Before any model call: a blocked input never reaches a provider. (A resumed turn
        # brings no input: its own was checked when the run began.)
        blocked = None
        if run_input.resume is None:
            blocked = await guard.check(user_texts(run_input), "input")
        if blocked is not None:
            for event in blocked_events(blocked, meter):
                yield event
            return
        flow_for = FLOWS.get(spec.agent_type)
        if flow_for is None:
            raise RunFailure(FailureCode.UNSUPPORTED, f"{spec.agent_type} agents cannot run yet")
        flow = flow_for(spec, run_input, meter, run_input.call_depth)
        answer = _Answer()
        async for event in guard_output(flow, guard, meter):
            yield answer.follow(event)
    except RunFailure as exc:
        yield ResponseFailed(exc.code, exc.message, meter.usage)
    except ProviderError as exc:
        yield ResponseFailed(FailureCode(exc.code), str(exc), meter.usage)
    except Exception:  # a bug must still end the stream with a final line, not cut it
        logger.exception("run of agent %s failed", spec.agent_id)
        yield ResponseFailed(FailureCode.INTERNAL_ERROR, "the run failed unexpectedly", meter.usage)


class _Answer:
    """Decides a completion's answer: the text the client was given in the final message
    (since the last tool call or result) or, if none was, the flow's text. An object
    answer, or a guardrail's message, is the answer already."""

    def __init__(self) -> None:
        self.text: list[str] = []

    def follow(self, event: Event) -> Event:
        if isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ToolCall | ToolResult):
            self.text = []
        elif (
            isinstance(event, ResponseCompleted)
            and isinstance(event.answer, str)
            and event.intervention is None
        ):
            return dataclasses.replace(event, answer="".join(self.text) or event.text)
        return event


def user_texts(run_input: RunInput) -> list[str]:
    """What the user wrote: their messages, or a task agent's string inputs. Never the
    system prompt, which is the agent author's."""
    if run_input.inputs is not None:
        return list(_strings(run_input.inputs))
    return [m.text for m in run_input.messages if m.role == "user"]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
