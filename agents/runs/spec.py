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
from agents.models import Agent, AgentVersion, Environment, LLMModel
from agents.rag import retriever
from agents.runtime.spec import AgentSpec, McpServerSpec, Retriever


def agent_spec(*, agent: Agent, version: AgentVersion) -> AgentSpec:
    """Everything the runtime needs about a version, task agents behind its tools included."""
    config = _parsed_config(agent.agent_type, version)
    # Read with the version on the invoke path (agents.runs.lookup.version_to_run).
    provider_name, model = _model_route(
        config.llm_model_id, getattr(version, "model_provider", UNREAD)
    )
    task_agents: dict[str, AgentSpec] = {}
    mcp_servers: tuple[McpServerSpec, ...] = ()
    if isinstance(config, ToolAgentConfig):
        for tool in config.tools:
            if isinstance(tool, TaskAgentTool):
                target = _task_target(agent, tool)
                if target is not None:
                    task_agents[tool.name] = agent_spec(agent=target[0], version=target[1])
        mcp = [tool for tool in config.tools if isinstance(tool, McpTool)]
        if mcp:
            mcp_servers = config_server_specs(environment_id=agent.environment_id, tools=mcp)
    return AgentSpec(
        agent_id=str(agent.pk),
        agent_type=agent.agent_type,
        config=config,
        provider=provider_for(provider_name),
        model=model,
        provider_name=provider_name,
        task_agents=task_agents,
        mcp_servers=mcp_servers,
    )


def _parsed_config(agent_type: str, version: AgentVersion) -> AgentConfig:
    """The version's config, parsed once per process: a version never changes (a new
    config is a new version) and the parsed form is frozen, so every call can share it."""
    config = _configs.get(version.pk)
    if config is None:
        config = config_parse(agent_type, version.config)
        with _configs_lock:  # request threads share the cache
            if len(_configs) >= _CONFIGS_KEPT:
                del _configs[next(iter(_configs))]  # the oldest entry
            _configs[version.pk] = config
    return config


_CONFIGS_KEPT = 1024
_configs: dict[Any, AgentConfig] = {}
_configs_lock = threading.Lock()

UNREAD = object()  # the catalog's provider was not read with the version


def _model_route(model_id: str, provider: Any = UNREAD) -> tuple[str, str]:
    """(provider, reported model) for a model id; LLM_OFFLINE sends all to the local model."""
    if settings.LLM_OFFLINE:
        return "local", LOCAL_MODEL
    if provider is UNREAD:
        provider = LLMModel.objects.filter(pk=model_id).values_list("provider", flat=True).first()
    return provider or "local", model_id


def _task_target(agent: Agent, tool: TaskAgentTool) -> tuple[Agent, AgentVersion] | None:
    target = Agent.objects.filter(
        pk=tool.agent_id,
        environment_id=agent.environment_id,
        deleted_at__isnull=True,
        agent_type="task",
    ).first()
    if target is None:
        return None
    versions = target.versions.order_by("-number")
    if tool.agent_version != "latest":
        versions = versions.filter(number=tool.agent_version)
    version = versions.first()
    return (target, version) if version is not None else None


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
