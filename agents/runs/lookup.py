"""What a run's start reads about the agent and the version it runs, each from one statement
written once, as a typed row (`RunTarget`): the agent, the caller's grants, the version a
reference names and its model's provider, in one round trip on every call."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection

from agentbuilder.errors import Invalid, NotFound
from agentbuilder.users import User
from agents.access.permissions import BY_ID, BY_NAME, Action, held_array
from agents.budgets.gate import applying_params, applying_sql
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, AgentType, AgentVersion, Environment, LLMModel
from agents.runtime.pricing import Price
from agents.selectors.agents import invocable_check, named
from agents.selectors.versions import VersionRef, version_kind, version_ref_parse, version_where


@dataclass(frozen=True)
class RunTarget:
    """An agent's version as a run needs it. `model_provider` is the catalog's provider of
    the config's model, None when the catalog has no such model."""

    agent_id: uuid.UUID
    agent_name: str
    agent_type: str
    environment_id: uuid.UUID
    version_id: uuid.UUID
    version_number: int
    config: dict[str, Any]
    model_provider: str | None
    # USD per million tokens of the model that answers (the offline model's under
    # LLM_OFFLINE): None when the catalog has no price for it.
    price: Price | None = None
    # The run path's: the budgets that apply to the caller's run, with their spend at
    # `read_at` (agents.budgets.gate.applying_sql); None when none does.
    budgets: list[list[Any]] | None = None
    read_at: datetime | None = None
    # The config's fallbackModels the catalog still serves, in their order.
    fallbacks: tuple[CatalogModel, ...] = ()
    # `config` is a draft run in place of the version's (`draft_target`), never cached as it.
    draft: bool = False


@dataclass(frozen=True)
class CatalogModel:
    """A model of the catalog as a run calls it: who serves it, at what price."""

    model_id: str
    provider: str
    price: Price | None


def run_target(
    *,
    user: User,
    environment: Environment,
    agent_id: uuid.UUID | None,
    ref: str,
    name: str = "",
    held: AbstractSet[str] | None = None,
) -> RunTarget:
    """The version `ref` names (`latest`, a number, an id, an alias) of agent `agent_id`
    (None: the agent of `environment` that `name` names, ignoring case), which `user` may
    INVOKE in `environment`, from one statement with the caller's grants, or with `held`,
    the grants the caller's request read already with the agent (agent_seen_by_name). The
    refusals of `agent_get_to_invoke` then of `version_get`, in that order: NotFound or
    PermissionDenied for the agent, Invalid or NotFound for the version."""
    try:
        parsed = version_ref_parse(ref)
    except Invalid:  # the agent's refusals first: read it as for the latest version
        latest = functools.partial(run_target, user=user, environment=environment, ref="latest")
        latest(agent_id=agent_id, name=name, held=held)
        raise
    kind = version_kind(parsed)
    now = datetime.now(UTC)
    by_name = agent_id is None
    params = _params(agent_id, parsed, user=user.pk, name=name, environment=environment.pk)
    row = _fetch(_invoke_sql(kind, by_name, held is None), params | applying_params(now))
    if row is not None and held is None:
        held = set(Action) if user.is_superuser else set(row[_HELD])
    in_environment = row is not None and row[_ENVIRONMENT] == environment.pk
    what = named(name, environment) if by_name else f"Agent '{agent_id}'"
    invocable_check(None if row is None else held, in_environment=in_environment, what=what)
    assert row is not None  # invocable_check refused a missing agent
    if row[_VERSION] is None:
        what = "Alias" if kind == "alias" else "Version"
        raise NotFound(f"{what} '{ref}' of agent '{row[_NAME]}' not found.")
    return dataclasses.replace(_target(row), budgets=row[_BUDGETS], read_at=now)


def draft_target(target: RunTarget, config: dict[str, Any]) -> RunTarget:
    """`target` running `config` (validated, unsaved) instead of its version's: the
    provider, price and fallbacks of the models `config` names, read from the catalog."""
    model_id = str(config.get("llmModelId", ""))
    fallback_ids = [str(m) for m in config.get("fallbackModels") or ()]
    priced = LOCAL_MODEL if settings.LLM_OFFLINE else model_id
    rows = {
        m.pk: m
        for m in LLMModel.objects.filter(pk__in={model_id, priced, *fallback_ids}).only(
            "provider", "enabled", *_PRICES
        )
    }
    main, paying = rows.get(model_id), rows.get(priced)
    return dataclasses.replace(
        target,
        config=config,
        model_provider=main.provider if main is not None else None,
        price=_price([getattr(paying, f) for f in _PRICES]) if paying is not None else None,
        fallbacks=tuple(
            CatalogModel(m.pk, m.provider, _price([getattr(m, f) for f in _PRICES]))
            for m in (rows.get(i) for i in fallback_ids)
            if m is not None and m.enabled
        ),
        draft=True,
    )


_PRICES = ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok")


def task_target(
    *, environment_id: uuid.UUID, agent_id: uuid.UUID, number: int | None
) -> RunTarget | None:
    """A tool's task agent: version `number` (None: the latest) of the live task agent
    `agent_id` of the environment, or None. No caller's grants: the tool's agent chose it,
    and saving its config checked that its author may READ it."""
    params = _params(agent_id, number, environment=environment_id, task=AgentType.TASK.value)
    row = _fetch(_task_sql(version_kind(number)), params)
    return None if row is None or row[_VERSION] is None else _target(row)


def _params(agent_id: uuid.UUID | None, parsed: VersionRef, **more: Any) -> dict[str, Any]:
    # Under LLM_OFFLINE the offline model answers whatever the config names: its price.
    priced = LOCAL_MODEL if settings.LLM_OFFLINE else None
    params = {"agent": agent_id, "priced": priced, **more}
    if parsed is not None:
        params["ref"] = parsed
    return params


def _fetch(sql: str, params: dict[str, Any]) -> Sequence[Any] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row: Sequence[Any] | None = cursor.fetchone()
        return row


def _target(row: Sequence[Any]) -> RunTarget:
    return RunTarget(
        agent_id=row[0],
        agent_name=row[_NAME],
        agent_type=row[2],
        environment_id=row[_ENVIRONMENT],
        version_id=row[_VERSION],
        version_number=row[5],
        # psycopg parses `json` already; the field decodes what it would not have.
        config=_CONFIG.from_db_value(row[6], None, connection),
        model_provider=row[7],
        price=_price(row[8:11]),
        fallbacks=tuple(
            CatalogModel(model_id, provider, _price(prices))
            for model_id, provider, *prices in row[_FALLBACKS]
        ),
    )


def _price(prices: Sequence[Any]) -> Price | None:
    inputs, outputs, cached = prices
    if inputs is None or outputs is None:
        return None
    return Price(float(inputs), float(outputs), None if cached is None else float(cached))


# The row both statements select, by position: the agent's, the version's, the provider,
# the prices, the fallback models; the invoke path's adds the caller's grants and the
# budgets that apply to its run (agents.budgets.gate.applying_sql).
_NAME, _ENVIRONMENT, _VERSION, _FALLBACKS, _HELD, _BUDGETS = 1, 3, 4, 11, 12, 13
_CONFIG = AgentVersion._meta.get_field("config")


@functools.cache
def _invoke_sql(kind: str, by_name: bool, reads_grants: bool) -> str:
    budgets = applying_sql(environment="a.environment_id", agent="a.id")
    held = held_array("a") if reads_grants else "NULL"
    return _statement(
        kind, columns=f", {held} AS held, {budgets} AS budgets", match=BY_NAME if by_name else BY_ID
    )


@functools.cache
def _task_sql(kind: str) -> str:
    return _statement(
        kind, condition="AND a.environment_id = %(environment)s AND a.agent_type = %(task)s"
    )


def _statement(kind: str, *, columns: str = "", condition: str = "", match: str = BY_ID) -> str:
    quote = connection.ops.quote_name
    agents, versions = quote(Agent._meta.db_table), quote(AgentVersion._meta.db_table)
    models = quote(LLMModel._meta.db_table)
    where = version_where(kind, agent="a.id", ref="%(ref)s")
    # Table names from the models' metadata; `columns`, `condition` and `match` are this
    # module's own SQL; every value is a parameter.
    return f"""
        SELECT a.id, a.name, a.agent_type, a.environment_id,
            v.id AS version_id, v.number, v.config,
            (SELECT m.provider FROM {models} m WHERE m.id = v.config->>'llmModelId'),
            p.input_usd_per_mtok, p.output_usd_per_mtok, p.cached_input_usd_per_mtok,
            (SELECT COALESCE(json_agg(json_build_array(m.id, m.provider, m.input_usd_per_mtok,
                    m.output_usd_per_mtok, m.cached_input_usd_per_mtok) ORDER BY f.n), '[]')
                FROM json_array_elements_text(v.config->'fallbackModels')
                    WITH ORDINALITY f(id, n)
                JOIN {models} m ON m.id = f.id AND m.enabled){columns}
        FROM {agents} a
        LEFT JOIN LATERAL (SELECT * FROM {versions} v WHERE {where} LIMIT 1) v ON true
        LEFT JOIN {models} p ON p.id = COALESCE(%(priced)s::text, v.config->>'llmModelId')
        WHERE {match} AND a.deleted_at IS NULL {condition}
    """  # noqa: S608
