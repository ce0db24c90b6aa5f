"""Task agents: validated inputs ▸ a sandboxed Jinja2 prompt ▸ one answer, schema-checked."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import jinja2
import jsonschema

from agents import json_schemas
from agents.configs import TaskAgentConfig
from agents.llm.base import TASK_INPUTS_HEADER, Message, ModelRequest, ToolSpec
from agents.runtime.depth import CallDepth
from agents.runtime.events import Event, ResponseCompleted, TextDelta
from agents.runtime.failures import FailureCode
from agents.runtime.model_step import StepResult, model_request, model_step
from agents.runtime.spec import AgentSpec, Meter, RunFailure, RunInput
from agents.runtime.tools.base import ToolFailure, schema_problems
from agents.templating import TemplateLimitError, render, template_limits

OUTPUT_TOOL = "task_output"


class TaskInputError(Exception):
    """Inputs a task agent cannot run with; each problem is (path, message)."""

    def __init__(self, problems: list[tuple[tuple[str | int, ...], str]]) -> None:
        super().__init__("; ".join(m for _, m in problems))
        self.problems = problems


def _error_path(error: jsonschema.ValidationError) -> tuple[str | int, ...]:
    """Where the error is; a missing required property is located at itself, not at the
    object that lacks it, so a form can mark the field."""
    path = tuple(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        for name in error.validator_value:
            if name not in error.instance and error.message == f"{name!r} is a required property":
                return (*path, name)
    return path


def prepare_inputs(config: TaskAgentConfig, inputs: Any) -> tuple[dict[str, Any], str]:
    """Validated inputs with schema defaults filled, and the rendered prompt (CPU-bound for
    up to TASK_TEMPLATE_MAX_SECONDS: not on the event loop).

    Raises TaskInputError listing every violation with its path, and TemplateLimitError
    when rendering the prompt went over a limit.
    """
    if not isinstance(inputs, dict):
        raise TaskInputError([((), "inputs must be a JSON object")])
    filled = fill_defaults(config.input_schema, copy.deepcopy(inputs))
    try:
        found = json_schemas.errors(filled, config.input_schema)
    except json_schemas.SchemaRefused as exc:  # a config checked when saved does not get here
        raise TaskInputError([((), f"the agent's inputSchema cannot be used: {exc}")]) from None
    problems = [(_error_path(e), e.message) for e in found]
    if problems:
        raise TaskInputError(problems)
    try:
        prompt = render(config.system_prompt, filled, template_limits())
    except TemplateLimitError:
        raise
    except jinja2.UndefinedError as exc:
        raise TaskInputError([((), f"template variable missing: {exc.message}")]) from None
    except jinja2.TemplateError as exc:
        raise TaskInputError([((), f"the prompt template failed: {exc}")]) from None
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        # The template's own code failed on these inputs (1 / 0, int('x')): not a bug here.
        message = f"{type(exc).__name__}: {exc}"
        raise TaskInputError([((), f"the prompt template failed: {message}")]) from None
    return filled, prompt


def fill_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """Fill `default`s of object properties, recursively, without overwriting given values."""
    if not isinstance(value, dict):
        return value
    for name, prop in schema.get("properties", {}).items():
        if not isinstance(prop, Mapping):
            continue
        if name not in value and "default" in prop:
            value[name] = copy.deepcopy(prop["default"])
        if name in value:
            value[name] = fill_defaults(prop, value[name])
    return value


async def run_task_agent(
    spec: AgentSpec, run_input: RunInput, meter: Meter, depth: CallDepth
) -> AsyncIterator[Event]:
    config = spec.config
    assert isinstance(config, TaskAgentConfig)
    try:
        inputs, prompt = await asyncio.to_thread(
            prepare_inputs, config, dict(run_input.inputs or {})
        )
    except TemplateLimitError as exc:
        raise RunFailure(
            FailureCode.TEMPLATE_LIMIT, f"the prompt template went over a limit: {exc}"
        ) from None
    messages = [_inputs_message(inputs)]
    if config.output_schema is None:
        step = StepResult()
        async for delta in model_step(
            spec, _request(config, prompt, messages), meter, step, stream=True
        ):
            yield delta
        yield ResponseCompleted(usage=meter.usage, text=step.text)
        return
    value = await _structured(spec, config, prompt, messages, meter)
    text = json.dumps(value, ensure_ascii=False)
    yield TextDelta(text)
    yield ResponseCompleted(usage=meter.usage, text=text, structured=value)


async def run_task_nested(
    spec: AgentSpec, arguments: dict[str, Any], meter: Meter, depth: CallDepth
) -> str | dict[str, Any]:
    """A task agent called as a tool: its answer, or ToolFailure saying why not."""
    try:
        run_input = RunInput(inputs=arguments, call_depth=depth)
        events = [e async for e in run_task_agent(spec, run_input, meter, depth)]
    except TaskInputError as exc:
        raise ToolFailure("invalid inputs: " + "; ".join(m for _, m in exc.problems)) from None
    except RunFailure as exc:
        raise ToolFailure(exc.message) from None
    done = events[-1]
    assert isinstance(done, ResponseCompleted)
    return done.structured if done.structured is not None else done.text


def _inputs_message(inputs: dict[str, Any]) -> Message:
    text = json.dumps(inputs, indent=2, ensure_ascii=False)
    return Message("user", f"{TASK_INPUTS_HEADER}\n{text}")


def _request(
    config: TaskAgentConfig, prompt: str, messages: list[Message], tools: tuple[ToolSpec, ...] = ()
) -> ModelRequest:
    force = tools[0].name if tools else None
    return model_request(
        config, system=prompt, messages=messages, tools=tools, force_tool=force, purpose="task"
    )


async def _structured(
    spec: AgentSpec, config: TaskAgentConfig, prompt: str, messages: list[Message], meter: Meter
) -> dict[str, Any]:
    assert config.output_schema is not None
    tool = ToolSpec(
        OUTPUT_TOOL, "Give the answer as an object matching the schema.", config.output_schema
    )
    for _attempt in range(config.inference_config.max_retries + 1):
        step = StepResult()
        async for _ in model_step(
            spec, _request(config, prompt, messages, (tool,)), meter, step, stream=False
        ):
            pass
        call = next((c for c in step.tool_calls if c.name == OUTPUT_TOOL), None)
        if call is None:
            problem = "answer with the task_output tool"
        else:
            try:
                value = json.loads(call.arguments)
            except json.JSONDecodeError as exc:
                value, problem = None, f"not valid JSON: {exc.msg}"
            else:
                problems = schema_problems(value, config.output_schema)
                if not problems:
                    return value
                problem = "; ".join(problems)
        messages = [*messages, Message("assistant", step.text, tuple(step.tool_calls))]
        if call is not None:
            messages.append(
                Message("tool", problem, tool_call_id=call.call_id, name=OUTPUT_TOOL, is_error=True)
            )
        else:
            messages.append(Message("user", problem))
    raise RunFailure(
        FailureCode.OUTPUT_INVALID, "the model's answer did not match the output schema"
    )
