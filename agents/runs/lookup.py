"""The invoke path's reads, each one statement written once: the agent, the caller's grants,
the version a reference names and its model's provider."""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import connection

from agentbuilder.db import columns_sql, one_model, one_row
from agentbuilder.errors import Invalid, NotFound
from agents.access.permissions import held_array, held_read
from agents.models import Agent, AgentVersion, Environment, LLMModel
from agents.selectors.agents import agent_get_to_invoke, invocable
from agents.selectors.versions import version_ref_parse, version_where


def agent_and_version_to_invoke(
    *, user: Any, environment: Environment, agent_id: uuid.UUID, ref: str
) -> tuple[Agent, AgentVersion]:
    """`agent_get_to_invoke`, then `version_to_run`, from one statement: the invoke
    path's start reads the agent, the caller's grants, the version and its model's
    provider in one round trip. The same refusals in the same order: the agent's
    (NotFound, PermissionDenied), then the version's (Invalid, NotFound)."""
    try:
        parsed = version_ref_parse(ref)
    except Invalid:
        agent_get_to_invoke(user=user, environment=environment, agent_id=agent_id)
        raise
    kind = "latest" if parsed is None else type(parsed).__name__
    params: dict[str, Any] = {"agent": agent_id, "user": user.pk}
    if parsed is not None:
        params["ref"] = parsed
    found = one_row(_invoke_sql(kind), params, Agent, ("v__", AgentVersion))
    agent, version = found if found is not None else (None, None)
    agent = invocable(None if agent is None else held_read(agent, user), environment, agent_id)
    if version is None:
        what = "Alias" if isinstance(parsed, str) else "Version"
        raise NotFound(f"{what} '{ref}' of agent '{agent.name}' not found.")
    version.agent = agent
    return agent, version


@functools.cache
def _invoke_sql(kind: str) -> str:
    quote = connection.ops.quote_name
    agents = quote(Agent._meta.db_table)
    versions = quote(AgentVersion._meta.db_table)
    where = version_where(kind, agent="a.id", ref="%(ref)s")
    agent, version = columns_sql(Agent, "a"), columns_sql(AgentVersion, "v", "v__")
    # Table and column names from the models' metadata; every value is a parameter.
    return f"""
        SELECT {agent}, {held_array("a")} AS held, {version},
            ({_provider_sql()}) AS v__model_provider
        FROM {agents} a
        LEFT JOIN LATERAL (SELECT * FROM {versions} v WHERE {where} LIMIT 1) v ON true
        WHERE a.id = %(agent)s AND a.deleted_at IS NULL
    """  # noqa: S608


def _provider_sql() -> str:
    """The catalog's provider of version `v`'s model (None when the catalog has no such
    model): agents.runs.spec needs it next, every call."""
    models = connection.ops.quote_name(LLMModel._meta.db_table)
    return f"SELECT m.provider FROM {models} m WHERE m.id = v.config->>'llmModelId'"  # noqa: S608


def version_to_run(*, agent: Agent, ref: str) -> AgentVersion:
    """`version_get` for the invoke path, from one of four statements written once (the
    ORM's form cost more Python than the rest of the lookup); raises NotFound or Invalid."""
    parsed = version_ref_parse(ref)
    kind = "latest" if parsed is None else type(parsed).__name__
    params: list[Any] = [agent.pk] if parsed is None else [agent.pk, parsed]
    version = one_model(AgentVersion, _version_sql(kind), params)
    if version is None:
        what = "Alias" if isinstance(parsed, str) else "Version"
        raise NotFound(f"{what} '{ref}' of agent '{agent.name}' not found.")
    return version


@functools.cache
def _version_sql(kind: str) -> str:
    versions = connection.ops.quote_name(AgentVersion._meta.db_table)
    where = version_where(kind, agent="%s", ref="%s")
    # The table's name from the model's metadata; every value is a parameter.
    return (
        f"SELECT {columns_sql(AgentVersion, 'v')}, ({_provider_sql()}) AS model_provider"  # noqa: S608
        f" FROM {versions} v WHERE {where} LIMIT 1"
    )
