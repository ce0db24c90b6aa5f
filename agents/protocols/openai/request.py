"""The `/v1/openai` chat completions request: the seed's body (agents.protocols.
chat_completions.request) whose `tools`, `tool_choice` and `parallel_tool_calls` mean what
they mean to OpenAI: the client's tools join the agent's for this call."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictBool, model_validator

from agentbuilder.errors import Invalid
from agents.llm.base import ToolSpec
from agents.protocols.chat_completions.request import ChatCompletionRequest, _Lenient
from agents.runtime.spec import ToolChoice

SCHEMA_PREFIX = "OpenAI"
# OpenAI's own limits on a function's name and on the number of tools.
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MAX_TOOLS = 128
MODES = ("auto", "none", "required")


class FunctionDefinition(_Lenient):
    name: str = Field(max_length=64, description="`^[a-zA-Z0-9_-]{1,64}$`, as OpenAI has it.")
    description: str | None = Field(None, max_length=4000)
    parameters: dict[str, Any] | None = Field(
        None, description="JSON Schema of the arguments object; none: no arguments."
    )
    strict: StrictBool | None = None


class ClientTool(_Lenient):
    """A tool the client runs: the model may call it, the completion then ends with
    `finish_reason: "tool_calls"`."""

    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(_Lenient):
    name: str


class NamedToolChoice(_Lenient):
    type: Literal["function"]
    function: NamedFunction


class OpenAIChatCompletionRequest(ChatCompletionRequest):
    tools: list[ClientTool] | None = Field(  # type: ignore[assignment]
        None, max_length=MAX_TOOLS, description="Tools the client runs, beside the agent's."
    )
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoice | None = Field(  # type: ignore[assignment]
        None,
        description="Applies to the model calls of this completion: `none` calls no tool "
        "(the agent's included); `required` and a named function bind the first one.",
    )
    parallel_tool_calls: StrictBool | None = Field(
        None, description="`false`: at most one tool call per model call."
    )

    @model_validator(mode="after")
    def _request_tools(self) -> OpenAIChatCompletionRequest:
        seen: dict[str, int] = {}
        for index, tool in enumerate(self.tools or ()):
            at = ("tools", index, "function")
            name = tool.function.name
            if not TOOL_NAME.fullmatch(name):
                raise Invalid.at((*at, "name"), "letters, digits, '_' and '-', at most 64")
            if name in seen:
                raise Invalid.at((*at, "name"), f"tools[{seen[name]}] has this name already")
            seen[name] = index
            parameters = tool.function.parameters
            if parameters is not None and parameters.get("type", "object") != "object":
                raise Invalid.at((*at, "parameters", "type"), "the arguments are an object")
        return self

    def client_tools(self) -> tuple[ToolSpec, ...]:
        return tuple(
            ToolSpec(
                t.function.name,
                t.function.description or "",
                t.function.parameters or {"type": "object", "properties": {}},
            )
            for t in self.tools or ()
        )

    def run_tool_choice(self) -> ToolChoice:
        choice = self.tool_choice
        if isinstance(choice, NamedToolChoice):
            return ToolChoice("function", choice.function.name)
        return ToolChoice(choice or "auto")
