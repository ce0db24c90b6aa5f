"""The runtime's spec of a run, built from the database: the version's config, its
provider and model, the task agents and MCP servers behind its tools, its retrievers."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from agentbuilder.errors import Invalid
from agents.configs import (
    AgentConfig,
    McpTool,
    RagAgentConfig,
    RagTool,
    TaskAgentTool,
    ToolAgentConfig,
    config_parse,
)
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.llm.registry import provider_for
from agents.mcp_registry.request import McpServerRequest
from agents.mcp_registry.run_servers import config_server_specs, request_server_specs
from agents.models import Environment
from agents.rag import retriever
from agents.runs.lookup import RunTarget, task_target
from agents.runtime.spec import AgentSpec, FallbackModel, McpServerSpec, Retriever


def agent_spec(*, target: RunTarget) -> AgentSpec:
    """Everything the runtime needs about a version, task agents behind its tools included."""
    config = _parsed_config(target)
    provider_name, model = model_route(config.llm_model_id, target.model_provider)
    task_agents: dict[str, AgentSpec] = {}
    mcp_servers: tuple[McpServerSpec, ...] = ()
    if isinstance(config, ToolAgentConfig):
        for tool in config.tools:
            if isinstance(tool, TaskAgentTool):
                task = task_target(
                    environment_id=target.environment_id,
                    agent_id=tool.agent_id,
                    number=None if tool.agent_version == "latest" else tool.agent_version,
                )
                if task is not None:
                    task_agents[tool.name] = agent_spec(target=task)
        mcp = [tool for tool in config.tools if isinstance(tool, McpTool)]
        if mcp:
            mcp_servers = config_server_specs(environment_id=target.environment_id, tools=mcp)
    return AgentSpec(
        agent_id=str(target.agent_id),
        agent_type=target.agent_type,
        config=config,
        provider=provider_for(provider_name),
        model=model,
        provider_name=provider_name,
        price=target.price,
        fallbacks=_fallbacks(target, model),
        task_agents=task_agents,
        mcp_servers=mcp_servers,
    )


def _fallbacks(target: RunTarget, model: str) -> tuple[FallbackModel, ...]:
    """The config's fallback models the catalog serves; none under LLM_OFFLINE, where the
    offline model answers for each and would only fail the same way again."""
    if settings.LLM_OFFLINE:
        return ()
    return tuple(
        FallbackModel(f.model_id, provider_for(f.provider), f.provider, f.price)
        for f in target.fallbacks
        if f.model_id != model
    )


def _parsed_config(target: RunTarget) -> AgentConfig:
    """The version's config, parsed once per process: a version never changes (a new
    config is a new version) and the parsed form is frozen, so every call can share it."""
    if target.draft:  # not the version's config: parsed for this run only
        return config_parse(target.agent_type, target.config)
    config = _configs.get(target.version_id)
    if config is None:
        config = config_parse(target.agent_type, target.config)
        with _configs_lock:  # request threads share the cache
            if len(_configs) >= _CONFIGS_KEPT:
                del _configs[next(iter(_configs))]  # the oldest entry
            _configs[target.version_id] = config
    return config


_CONFIGS_KEPT = 1024
_configs: dict[Any, AgentConfig] = {}
_configs_lock = threading.Lock()


def model_route(model_id: str, provider: str | None) -> tuple[str, str]:
    """(provider, reported model) for a model id and the catalog's provider of it (None:
    not in the catalog); LLM_OFFLINE sends all to the local model."""
    if settings.LLM_OFFLINE:
        return "local", LOCAL_MODEL
    return provider or "local", model_id


def with_max_iterations(spec: AgentSpec, max_iterations: int | None) -> AgentSpec:
    """A protocol's own limit (chat completions' iteration_limit) wins for this call."""
    if max_iterations is None or not isinstance(spec.config, ToolAgentConfig):
        return spec
    config = spec.config.model_copy(update={"max_iterations": max_iterations})
    return dataclasses.replace(spec, config=config)


def with_request_servers(
    spec: AgentSpec, environment: Environment, requests: Sequence[McpServerRequest]
) -> AgentSpec:
    """The spec with the servers a request names for this run. Raises Invalid."""
    if not requests:
        return spec
    if not isinstance(spec.config, ToolAgentConfig):
        raise Invalid.at(requests[0].loc[:-1], "only tool agents can use MCP servers")
    extra = request_server_specs(environment=environment, requests=requests)
    return dataclasses.replace(spec, mcp_servers=(*spec.mcp_servers, *extra))


def retrievers(
    spec: AgentSpec, environment: Environment, overrides: Mapping[str, Any] | None
) -> dict[str, Retriever]:
    """Retrieval bound to the environment: a RAG agent's (with the request's overrides),
    or a tool agent's semantic_search tools' by tool name. Raises Invalid (bad HxQL)."""
    config = spec.config
    if isinstance(config, RagAgentConfig):
        return {
            "": retriever(
                environment_id=environment.pk, rag=config, overrides=dict(overrides or {})
            )
        }
    if isinstance(config, ToolAgentConfig):
        return {
            tool.name: retriever(environment_id=environment.pk, rag=tool.semantic_search_config)
            for tool in config.tools
            if isinstance(tool, RagTool)
        }
    return {}
