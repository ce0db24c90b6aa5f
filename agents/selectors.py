"""Reads. Every selector takes the caller and returns only what the caller may see."""

from __future__ import annotations

import functools
import re
import uuid
from typing import Any

from django.db import connection
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Lower

from agentbuilder.db import columns_sql, one_model, one_row
from agentbuilder.errors import Invalid, NotFound, PermissionDenied
from agents.models import (
    ALIAS_PATTERN,
    RESERVED_ALIASES,
    Agent,
    AgentVersion,
    AliasChange,
    Environment,
    LLMModel,
    Run,
    VersionAlias,
)
from agents.permissions import (
    Action,
    agent_with_held,
    agents_with,
    environments_visible,
    held_array,
    held_read,
    may,
    may_flag,
)

DEFAULT_ENVIRONMENT = "default"
ALIAS_RULE = "1 to 50 characters: letters, digits, '-' and '_', starting with a letter"


def environment_resolve(*, user: Any, claim: str | None, header: str | None) -> Environment:
    """The request's environment: the token's claim, else the header (name or id), else
    `default`. Raises NotFound for an environment the caller cannot see."""
    if not header or claim:
        # Read with the token's holder (agents.tokens.token_holder): no query of its own.
        known = getattr(user, "token_environment", None)
        if known is not None:
            return known
    if claim:
        env = Environment.objects.filter(pk=claim).first()
        if env is None:
            raise NotFound("The token's environment no longer exists.")
        return env
    if header:
        visible = environments_visible(user)
        env = _by_name_or_id(visible, header.strip())
        if env is None:
            raise NotFound(f"Environment '{header.strip()}' not found.")
        return env
    env = Environment.objects.filter(name=DEFAULT_ENVIRONMENT).first()
    if env is None:
        raise NotFound(f"Environment '{DEFAULT_ENVIRONMENT}' not found.")
    return env


def _by_name_or_id(envs: QuerySet[Environment], ref: str) -> Environment | None:
    try:
        return envs.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        return envs.filter(name__iexact=ref).first()


def environment_list(*, user: Any) -> QuerySet[Environment]:
    return environments_visible(user).order_by("name")


def _with_current_version(agents: QuerySet[Agent]) -> QuerySet[Agent]:
    latest = AgentVersion.objects.filter(agent=OuterRef("pk")).order_by("-number")
    return agents.select_related("created_by", "modified_by").annotate(
        current_version_id=Subquery(latest.values("id")[:1])
    )


def agent_list(
    *, user: Any, environment: Environment, agent_type: str | None = None, name: str | None = None
) -> QuerySet[Agent]:
    """Agents of `environment` the caller can READ, filtered by type and name substring."""
    agents = agents_with(user, Action.READ).filter(environment=environment)
    if agent_type:
        agents = agents.filter(agent_type=agent_type)
    if name:
        agents = agents.filter(name__icontains=name)
    return _with_current_version(agents).order_by("name", "id")


def agent_list_invocable(*, user: Any, environment: Environment) -> QuerySet[Agent]:
    """Agents of `environment` the caller may INVOKE, by name: the OpenAI base's models."""
    return (
        agents_with(user, Action.INVOKE)
        .filter(environment=environment)
        .select_related("environment")
        .order_by("name", "id")
    )


def agent_get(
    *, user: Any, environment: Environment, agent_id: uuid.UUID, action: Action = Action.READ
) -> Agent:
    """One live agent of `environment`. Raises NotFound if the caller cannot READ it and
    PermissionDenied if it can READ it but not perform `action`."""
    return _visible_one(user, action, environment, Q(pk=agent_id), f"Agent '{agent_id}'")


def agent_get_to_invoke(*, user: Any, environment: Environment, agent_id: uuid.UUID) -> Agent:
    """`agent_get(action=INVOKE)` for the invoke routes, from one precompiled statement:
    NotFound unless the caller may READ or INVOKE the live agent in `environment`,
    PermissionDenied if it may READ it but not INVOKE it (docs/api.md#permissions)."""
    return _invocable(agent_with_held(user, agent_id), environment, agent_id)


def _invocable(agent: Agent | None, environment: Environment, agent_id: uuid.UUID) -> Agent:
    held: set[str] = getattr(agent, "held", set())
    if agent is None or agent.environment_id != environment.pk or not held & SEEN_TO_INVOKE:
        raise NotFound(f"Agent '{agent_id}' not found.")
    if Action.INVOKE not in held:
        raise PermissionDenied(f"You do not have {Action.INVOKE.name} permission on this agent.")
    agent.environment = environment  # the caller's, already read: no query for it
    return agent


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
    agent = _invocable(None if agent is None else held_read(agent, user), environment, agent_id)
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
    where = _version_where(kind, agent="a.id", ref="%(ref)s")
    agent, version = columns_sql(Agent, "a"), columns_sql(AgentVersion, "v", "v__")
    # Table and column names from the models' metadata; every value is a parameter.
    return f"""
        SELECT {agent}, {held_array("a")} AS held, {version},
            ({_provider_sql()}) AS v__model_provider
        FROM {agents} a
        LEFT JOIN LATERAL (SELECT * FROM {versions} v WHERE {where} LIMIT 1) v ON true
        WHERE a.id = %(agent)s AND a.deleted_at IS NULL
    """  # noqa: S608


def _version_where(kind: str, *, agent: str, ref: str) -> str:
    """Which version of agent `agent` (SQL) a reference of `kind` names (`ref`, SQL): the
    newest, by number, by id, or by alias (ignoring case)."""
    aliases = connection.ops.quote_name(VersionAlias._meta.db_table)
    # The table's name from the model's metadata; `agent` and `ref` are placeholders.
    return {
        "latest": f"v.agent_id = {agent} ORDER BY v.number DESC",
        "int": f"v.agent_id = {agent} AND v.number = {ref}",
        "UUID": f"v.agent_id = {agent} AND v.id = {ref}",
        "str": f"v.id = (SELECT al.version_id FROM {aliases} al"  # noqa: S608
        f" WHERE al.agent_id = {agent} AND lower(al.name) = lower({ref}))",
    }[kind]


def _provider_sql() -> str:
    """The catalog's provider of version `v`'s model (None when the catalog has no such
    model): agents.runs.spec needs it next, every call."""
    models = connection.ops.quote_name(LLMModel._meta.db_table)
    return f"SELECT m.provider FROM {models} m WHERE m.id = v.config->>'llmModelId'"  # noqa: S608


SEEN_TO_INVOKE = {Action.READ, Action.INVOKE}


def agent_get_invocable(*, user: Any, agent_id: uuid.UUID) -> Agent:
    """A live agent, in whichever environment, that `user` may INVOKE (the admin's
    playground finds it by id alone). Raises NotFound otherwise."""
    agent = agent_with_held(user, agent_id)  # the invoke routes' own check
    if agent is None or Action.INVOKE not in agent.held:  # type: ignore[attr-defined]
        raise NotFound(f"Agent '{agent_id}' not found.")
    return agent


def agent_get_by_name(
    *, user: Any, environment: Environment, name: str, action: Action = Action.READ
) -> Agent:
    return _visible_one(
        user,
        action,
        environment,
        Q(name__iexact=name),
        f"Agent '{name}' in environment '{environment.name}'",
    )


def agent_id_by_name(*, environment: Environment, name: str) -> uuid.UUID | None:
    """The id of the live agent of `environment` named `name` (ignoring case), whoever
    asks: for a caller that then checks the permission on the id (`agent_get_to_invoke`),
    which costs less than `agent_get_by_name`'s permission query."""
    agents = Agent.objects.alias(lower_name=Lower("name")).filter(
        environment=environment, lower_name=name.lower(), deleted_at__isnull=True
    )
    return agents.values_list("pk", flat=True).first()


def _visible_one(user: Any, action: Action, environment: Environment, match: Q, what: str) -> Agent:
    # One query: visibility (READ) filters, the permission asked for is a column. INVOKE
    # alone makes an agent visible to the invoke routes (docs/api.md#permissions): a service account
    # calls an agent without reading its config.
    seen_by = (Action.READ, Action.INVOKE) if action == Action.INVOKE else (Action.READ,)
    agents = Agent.objects.filter(may(user, *seen_by), deleted_at__isnull=True)
    agent = (
        _with_current_version(agents)
        .filter(match, environment=environment)
        .annotate(allowed=may_flag(user, action))
        .first()
    )
    if agent is None:
        raise NotFound(f"{what} not found.")
    if not agent.allowed:
        raise PermissionDenied(f"You do not have {action.name} permission on this agent.")
    return agent


def alias_name_problem(name: str) -> str | None:
    """Why `name` cannot name an alias, or None when it can."""
    if not re.fullmatch(ALIAS_PATTERN, name):
        return ALIAS_RULE
    if name.lower() in RESERVED_ALIASES:
        return f"'{name.lower()}' is reserved"
    if _is_uuid(name):
        return "must not be a version id (a uuid)"
    return None


def _is_uuid(ref: str) -> bool:
    try:
        uuid.UUID(ref)
    except ValueError:
        return False
    return True


def version_ref_parse(ref: str) -> uuid.UUID | int | str | None:
    """`latest` (None), a version number, a version uuid, or an alias name (returned as
    given); raises Invalid otherwise."""
    if ref == "latest":
        return None
    if ref.isascii() and ref.isdigit():
        number = int(ref)
        if 1 <= number <= 2**31 - 1:
            return number
    elif _is_uuid(ref):
        return uuid.UUID(ref)
    elif alias_name_problem(ref) is None:
        return ref
    raise Invalid.at(
        ("path", "versionId"),
        "must be 'latest', a version number (1, 2, …), a version id or an alias name",
    )


def version_get(*, agent: Agent, ref: str) -> AgentVersion:
    """A version of `agent` by `latest`, number, uuid or alias; raises NotFound or
    Invalid."""
    parsed = version_ref_parse(ref)
    versions = agent.versions.select_related("created_by")
    what = "Version"
    if parsed is None:
        version = versions.order_by("-number").first()
    elif isinstance(parsed, int):
        version = versions.filter(number=parsed).first()
    elif isinstance(parsed, str):
        version = versions.filter(aliases__agent=agent, aliases__name__iexact=parsed).first()
        what = "Alias"
    else:
        version = versions.filter(pk=parsed).first()
    if version is None:
        raise NotFound(f"{what} '{ref}' of agent '{agent.name}' not found.")
    return version


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
    where = _version_where(kind, agent="%s", ref="%s")
    # The table's name from the model's metadata; every value is a parameter.
    return (
        f"SELECT {columns_sql(AgentVersion, 'v')}, ({_provider_sql()}) AS model_provider"  # noqa: S608
        f" FROM {versions} v WHERE {where} LIMIT 1"
    )


def alias_list(*, agent: Agent) -> QuerySet[VersionAlias]:
    """The aliases of `agent` with the versions they point at, by name."""
    return (
        agent.aliases.select_related("version", "updated_by")
        .defer("version__config")
        .order_by(Lower("name"), "id")
    )


def alias_history(*, agent: Agent, name: str | None = None) -> QuerySet[AliasChange]:
    """Every change of the aliases of `agent` (of alias `name`, ignoring case), newest
    first."""
    changes = agent.alias_changes.select_related("from_version", "to_version", "changed_by")
    if name:
        changes = changes.filter(name__iexact=name)
    return changes.defer("from_version__config", "to_version__config").order_by(
        "-changed_at", "-id"
    )


def version_get_by_label(*, agent: Agent, label: str | None) -> AgentVersion:
    if not label:
        return version_get(agent=agent, ref="latest")
    version = agent.versions.select_related("created_by").filter(version_label=label).first()
    if version is None:
        raise NotFound(f"Version labelled '{label}' of agent '{agent.name}' not found.")
    return version


def version_list(*, agent: Agent) -> QuerySet[AgentVersion]:
    return agent.versions.select_related("created_by").defer("config").order_by("-number")


def latest_versions(*, agent_ids: list[uuid.UUID]) -> dict[uuid.UUID, AgentVersion]:
    """The latest version of each agent, in one query (DISTINCT ON)."""
    rows = (
        AgentVersion.objects.filter(agent_id__in=agent_ids)
        .select_related("created_by")
        .order_by("agent_id", "-number")
        .distinct("agent_id")
    )
    return {v.agent_id: v for v in rows}


def agents_by_ids(
    *, user: Any, environment: Environment, agent_ids: list[uuid.UUID]
) -> dict[uuid.UUID, Agent]:
    agents = _with_current_version(agents_with(user, Action.READ)).filter(
        environment=environment, pk__in=agent_ids
    )
    return {a.pk: a for a in agents}


def model_list(*, agent_type: str | None = None) -> QuerySet[LLMModel]:
    models = LLMModel.objects.filter(enabled=True)
    if agent_type:
        models = models.filter(agent_types__contains=[agent_type])
    return models.order_by("provider", "id")


def runs_visible(*, user: Any, environment: Environment | None = None) -> QuerySet[Run]:
    """Runs (of `environment`, or of every one) the caller may read: its own, of agents it
    may still READ or INVOKE, and every caller's of the agents it holds AUDIT on
    (docs/api.md#runs)."""
    in_env = Agent.objects.filter(deleted_at__isnull=True)
    if environment is not None:
        in_env = in_env.filter(environment=environment)
    usable = in_env.filter(may(user, Action.READ, Action.INVOKE)).values("pk")
    audited = in_env.filter(may(user, Action.AUDIT)).values("pk")
    return Run.objects.filter(Q(caller=user, agent__in=usable) | Q(agent__in=audited))


def run_list(
    *,
    user: Any,
    environment: Environment,
    agent_id: uuid.UUID | None = None,
    status: str | None = None,
    thread_id: str | None = None,
    caller_id: int | None = None,
) -> QuerySet[Run]:
    """The caller's runs in `environment` (every caller's where it holds AUDIT), newest
    first."""
    runs = runs_visible(user=user, environment=environment)
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    if thread_id:
        runs = runs.filter(thread_id=thread_id)
    if caller_id is not None:
        runs = runs.filter(caller_id=caller_id)
    return runs.order_by("-started_at", "-id")


def run_get(*, user: Any, environment: Environment, run_id: uuid.UUID) -> Run:
    run = runs_visible(user=user, environment=environment).filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"Run '{run_id}' not found.")
    return run


def thread_runs(
    *, user: Any, environment: Environment, thread_id: str, caller_id: int | None = None
) -> list[Run]:
    """The runs of one caller's thread (the caller's own, or with AUDIT `caller_id`'s),
    oldest first. A thread is its caller's: the same id from another caller is another
    thread. Raises NotFound when there is none."""
    runs = list(
        run_list(
            user=user,
            environment=environment,
            thread_id=thread_id,
            caller_id=user.pk if caller_id is None else caller_id,
        ).order_by("started_at", "id")
    )
    if not runs:
        raise NotFound(f"Thread '{thread_id}' not found.")
    return runs


def environment_public(*, reference: str | None) -> Environment:
    """The environment `reference` (name or id) names, else `default`, whoever asks: for
    what the operator made public (A2A_PUBLIC_CARDS). Raises NotFound."""
    if reference and reference.strip():
        env = _by_name_or_id(Environment.objects.all(), reference.strip())
        if env is None:
            raise NotFound(f"Environment '{reference.strip()}' not found.")
        return env
    return environment_resolve(user=None, claim=None, header=None)


def agent_list_public(*, environment: Environment) -> QuerySet[Agent]:
    """Every live agent of `environment`, by name, whoever asks (A2A_PUBLIC_CARDS)."""
    return Agent.objects.filter(environment=environment, deleted_at__isnull=True).order_by(
        "name", "id"
    )
