"""Turn a tool agent's config into the Tools its loop can call."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agents.configs import (
    FunctionTool,
    GatedTool,
    RagTool,
    StructuredOutputTool,
    TaskAgentConfig,
    TaskAgentTool,
    ToolAgentConfig,
)
from agents.llm.base import ToolSpec
from agents.runtime.depth import CallDepth
from agents.runtime.guard import screen_nodes
from agents.runtime.spec import AgentSpec, Meter, RunInput
from agents.runtime.tools.base import Outcome, Tool, ToolFailure, function_tool
from agents.runtime.tools.functions import REGISTRY


async def build_tools(
    spec: AgentSpec, meter: Meter, depth: CallDepth, run_input: RunInput | None = None
) -> dict[str, Tool]:
    """The agent's Tools by the name the model calls them; MCP servers are listed here, once
    per run. `depth` is the run's: an agent it calls runs one deeper."""
    config = spec.config
    assert isinstance(config, ToolAgentConfig)
    tools: dict[str, Tool] = {}
    for entry in config.tools:
        if isinstance(entry, FunctionTool):
            func = REGISTRY[entry.func_name]
            tool_spec = ToolSpec(entry.name, entry.description, func.parameters)
            tools[entry.name] = function_tool(tool_spec, func.func)
        elif isinstance(entry, StructuredOutputTool):
            tools[entry.name] = Tool(
                ToolSpec(entry.name, entry.description, entry.output_schema), _never_called
            )
        elif isinstance(entry, RagTool):
            tools[entry.name] = _search_tool(entry, run_input, meter)
        elif isinstance(entry, TaskAgentTool):
            target = spec.task_agents.get(entry.name)
            tools[entry.name] = (
                _task_agent_tool(entry, target, meter, depth)
                if target is not None
                else _missing_task_agent(entry)
            )
    for entry in config.tools:
        if isinstance(entry, GatedTool) and entry.require_approval is not None:
            tools[entry.name] = replace(tools[entry.name], approval=entry.require_approval)
    if spec.mcp_servers:
        # Imported here: the SDK is slow to load and most agents never need it.
        from agents.runtime.tools.mcp import mcp_tools

        tools.update(await mcp_tools(spec.mcp_servers, taken=set(tools), depth=depth.nested()))
    return tools


async def _never_called(arguments: dict[str, Any]) -> Outcome:  # pragma: no cover
    raise ToolFailure("structured_output is answered by the loop itself")


SEARCH_PARAMETERS = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for"}},
    "required": ["query"],
}


def _search_tool(entry: RagTool, run_input: RunInput | None, meter: Meter) -> Tool:
    """semantic_search: the passages that best answer `query`, with their sources."""
    retrieve = run_input.retrievers.get(entry.name) if run_input else None

    async def call(arguments: dict[str, Any]) -> Outcome:
        if retrieve is None:
            raise ToolFailure("search is not available in this run")
        nodes = await retrieve(str(arguments["query"]), meter.trace)
        # Passage by passage, so one poisoned passage does not cost the model the others.
        nodes = await screen_nodes(run_input.guardrails if run_input else (), nodes, meter.trace)
        found = [n.source_node() | {"title": n.title} for n in nodes]
        return Outcome(json.dumps(found, ensure_ascii=False), value=found)

    return Tool(ToolSpec(entry.name, entry.description, SEARCH_PARAMETERS), call)


def _missing_task_agent(entry: TaskAgentTool) -> Tool:
    """The target was deleted after the config was saved: the model is told, the run goes on."""

    async def call(arguments: dict[str, Any]) -> Outcome:
        raise ToolFailure(f"the task agent '{entry.agent_id}' behind {entry.name} no longer exists")

    return Tool(ToolSpec(entry.name, entry.description, {"type": "object"}), call)


def _task_agent_tool(
    entry: TaskAgentTool, target: AgentSpec, meter: Meter, depth: CallDepth
) -> Tool:
    assert isinstance(target.config, TaskAgentConfig)
    parameters = target.config.input_schema

    async def call(arguments: dict[str, Any]) -> Outcome:
        # Imported here: the task flow and this module refer to each other.
        from agents.runtime.task_agent import run_task_nested

        nested = depth.nested()
        if nested.exceeded:  # as an endpoint refuses a call this deep (agents.runtime.depth)
            raise ToolFailure(nested.refusal())
        answer = await run_task_nested(target, arguments, meter, nested)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Outcome(text, value=answer)

    return Tool(ToolSpec(entry.name, entry.description, parameters), call)
