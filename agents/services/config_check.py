"""Checking an agent's config: its shape, then the catalogs it names (models, guardrails,
functions, task agents, MCP servers, HxQL)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentbuilder.errors import ErrorItem, Invalid, Loc
from agentbuilder.users import User
from agents.access.permissions import Action, agents_with
from agents.configs import (
    AgentConfig,
    FunctionTool,
    McpTool,
    RagAgentConfig,
    RagTool,
    TaskAgentTool,
    ToolAgentConfig,
    config_dump,
    config_parse,
)
from agents.mcp_registry.selectors import mcp_server_ids_known
from agents.mcp_registry.services import raw_url_problem
from agents.models import Environment, LLMModel
from agents.runtime.tools.functions import function_names
from guardrails.selectors import unknown_guardrail_names
from retrieval.hxql import HxqlError, parse_hxql


def config_validate(
    *, user: User, environment: Environment, agent_type: str, data: Any, loc: Loc
) -> dict[str, Any]:
    """Check a config for `agent_type` (shape, then catalogs) and return its stored form.

    Raises Invalid listing every problem with its path under `loc`.
    """
    config = config_parse(agent_type, data, *loc)
    errors = list(_catalog_errors(user, environment, agent_type, config))
    if errors:
        raise Invalid([ErrorItem((*loc, *e.loc), e.msg, e.type) for e in errors])
    return config_dump(config)


def _catalog_errors(
    user: User, environment: Environment, agent_type: str, config: AgentConfig
) -> Iterable[ErrorItem]:
    named: list[tuple[Loc, str]] = [(("llmModelId",), config.llm_model_id)]
    named += [(("fallbackModels", i), m) for i, m in enumerate(config.fallback_models or ())]
    served = dict(
        LLMModel.objects.filter(pk__in=[m for _, m in named], enabled=True).values_list(
            "pk", "agent_types"
        )
    )
    for loc, model_id in named:
        if model_id not in served:
            yield ErrorItem(loc, f"unknown model '{model_id}'")
        elif agent_type not in served[model_id]:
            yield ErrorItem(loc, f"model '{model_id}' does not serve {agent_type} agents")

    for field, names in (
        ("guardrails", config.guardrails),
        ("contextGuardrails", config.context_guardrails or []),
    ):
        unknown = set(unknown_guardrail_names(names=names, environment_id=environment.pk))
        for index, name in enumerate(names):
            if name in unknown:
                yield ErrorItem((field, index), f"unknown guardrail '{name}'")

    if isinstance(config, ToolAgentConfig):
        yield from _tool_errors(user, environment, config)
    if isinstance(config, RagAgentConfig):
        yield from _hxql_errors(config.hxql_query, ("hxqlQuery",))


def _hxql_errors(query: str, loc: tuple[str | int, ...]) -> Iterable[ErrorItem]:
    try:
        parse_hxql(query)
    except HxqlError as exc:
        yield ErrorItem(loc, str(exc))


def _tool_errors(
    user: User, environment: Environment, config: ToolAgentConfig
) -> Iterable[ErrorItem]:
    known_functions = function_names()
    targets = [t.agent_id for t in config.tools if isinstance(t, TaskAgentTool)]
    # A target the caller cannot READ is reported exactly like one that does not exist.
    visible = {
        a.pk: a
        for a in agents_with(user, Action.READ).filter(pk__in=targets, environment=environment)
    }
    for index, tool in enumerate(config.tools):
        if isinstance(tool, RagTool):
            loc = ("tools", index, "semanticSearchConfig", "hxqlQuery")
            yield from _hxql_errors(tool.semantic_search_config.hxql_query, loc)
        elif isinstance(tool, FunctionTool) and tool.func_name not in known_functions:
            yield ErrorItem(("tools", index, "funcName"), f"unknown function '{tool.func_name}'")
        elif isinstance(tool, TaskAgentTool):
            target = visible.get(tool.agent_id)
            if target is None:
                msg = f"unknown agent '{tool.agent_id}' in environment '{environment.name}'"
                yield ErrorItem(("tools", index, "agentId"), msg)
            elif target.agent_type != "task":
                # Only task agents can be targets and they have no tools, so this one rule
                # also makes a cycle of task_agent references impossible.
                msg = f"agent '{target.name}' is a {target.agent_type} agent, not a task agent"
                yield ErrorItem(("tools", index, "agentId"), msg)
            elif (
                tool.agent_version != "latest"
                and not target.versions.filter(number=tool.agent_version).exists()
            ):
                msg = f"agent '{target.name}' has no version {tool.agent_version}"
                yield ErrorItem(("tools", index, "agentVersion"), msg)
    yield from _mcp_errors(environment, config)


def _mcp_errors(environment: Environment, config: ToolAgentConfig) -> Iterable[ErrorItem]:
    references = [
        (("tools", index, "mcpServerReferences", position), ref)
        for index, tool in enumerate(config.tools)
        if isinstance(tool, McpTool)
        for position, ref in enumerate(tool.mcp_server_references)
    ]
    ids = [ref.id for _, ref in references if ref.id is not None]
    known = mcp_server_ids_known(environment, ids)
    for loc, ref in references:
        if ref.id is not None and ref.id not in known:
            msg = f"unknown MCP server '{ref.id}' in environment '{environment.name}'"
            yield ErrorItem((*loc, "id"), msg)
        elif ref.url is not None:
            problem = raw_url_problem(ref.url)
            if problem:
                yield ErrorItem((*loc, "url"), problem)
