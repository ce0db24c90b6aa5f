"""Writes: agents, versions, API clients and tokens. Views, the admin and the dev set-up
all come through here."""

from __future__ import annotations

import functools
import re
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from agentbuilder.errors import Conflict, ErrorItem, Invalid, NotFound, PermissionDenied
from agents import selectors
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
from agents.mcp.servers import raw_url_problem
from agents.models import (
    NAME_PATTERN,
    Agent,
    AgentType,
    AgentVersion,
    AliasChange,
    APIClient,
    Environment,
    LLMModel,
    McpServer,
    VersionAlias,
)
from agents.permissions import Action, agents_with, grant, require_on_environment
from agents.runtime.tools.functions import function_names
from agents.tokens import token_encode
from guardrails.selectors import unknown_guardrail_names
from retrieval.hxql import HxqlError, parse_hxql

Loc = tuple[str | int, ...]

NAME_CONSTRAINT = "agent_name_ci_unique_per_environment"
NAME_RULE = "1 to 100 characters: letters, digits, '-', '_' and '.'"


# ---------------------------------------------------------------- configs


def config_validate(
    *, user: Any, environment: Environment, agent_type: str, data: Any, loc: Loc
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
    user: Any, environment: Environment, agent_type: str, config: AgentConfig
) -> Iterable[ErrorItem]:
    model = LLMModel.objects.filter(pk=config.llm_model_id, enabled=True).first()
    if model is None:
        yield ErrorItem(("llmModelId",), f"unknown model '{config.llm_model_id}'")
    elif agent_type not in model.agent_types:
        yield ErrorItem(("llmModelId",), f"model '{model.pk}' does not serve {agent_type} agents")

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
    user: Any, environment: Environment, config: ToolAgentConfig
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
    known = set(
        McpServer.objects.filter(
            Q(environment=environment) | Q(environment__isnull=True), pk__in=ids
        ).values_list("pk", flat=True)
        if ids
        else ()
    )
    for loc, ref in references:
        if ref.id is not None and ref.id not in known:
            msg = f"unknown MCP server '{ref.id}' in environment '{environment.name}'"
            yield ErrorItem((*loc, "id"), msg)
        elif ref.url is not None:
            problem = raw_url_problem(ref.url)
            if problem:
                yield ErrorItem((*loc, "url"), problem)


# ---------------------------------------------------------------- agents


def _duplicate(name: str, environment: Environment) -> Conflict:
    return Conflict(f"Agent '{name}' already exists in environment '{environment.name}'")


def _is_unique_violation(exc: IntegrityError, constraint: str) -> bool:
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.UniqueViolation) and (
        cause.diag.constraint_name == constraint
    )


def _check_fields(fields: dict[str, str]) -> None:
    errors = []
    if "name" in fields and not re.fullmatch(NAME_PATTERN, fields["name"]):
        errors.append(ErrorItem(("body", "name"), NAME_RULE))
    if len(fields.get("description", "")) > 200:
        errors.append(ErrorItem(("body", "description"), "at most 200 characters"))
    if len(fields.get("display_name", "")) > 200:
        errors.append(ErrorItem(("body", "displayName"), "at most 200 characters"))
    if errors:
        raise Invalid(errors)


@transaction.atomic
def agent_create(
    *,
    user: Any,
    environment: Environment,
    name: str,
    agent_type: str,
    config: Any,
    description: str = "",
    display_name: str = "",
    version_label: str = "",
    notes: str = "",
) -> tuple[Agent, AgentVersion]:
    """Create an agent with its version 1. Raises PermissionDenied, Invalid or Conflict."""
    require_on_environment(user, environment, Action.CREATE)
    _check_fields({"name": name, "description": description, "display_name": display_name})
    if agent_type not in AgentType.values:
        raise Invalid.at(("body", "agentType"), f"must be one of {', '.join(AgentType.values)}")
    stored = config_validate(
        user=user,
        environment=environment,
        agent_type=agent_type,
        data=config,
        loc=("body", "config"),
    )
    agent = Agent(
        environment=environment,
        name=name,
        display_name=display_name,
        description=description,
        agent_type=agent_type,
        created_by=user,
        modified_by=user,
    )
    try:
        with transaction.atomic():
            agent.save()
    except IntegrityError as exc:
        if _is_unique_violation(exc, NAME_CONSTRAINT):
            raise _duplicate(name, environment) from None
        raise
    version = AgentVersion.objects.create(
        agent=agent,
        number=1,
        version_label=version_label,
        notes=notes,
        config=stored,
        created_by=user,
    )
    return agent, version


@transaction.atomic
def agent_update(*, user: Any, agent: Agent, changes: dict[str, str]) -> Agent:
    """Rename or re-describe an agent (EDIT already checked by the selector)."""
    _check_fields(changes)
    for field, value in changes.items():
        setattr(agent, field, value)
    agent.modified_by = user
    try:
        with transaction.atomic():
            agent.save(update_fields=[*changes, "modified_by", "modified_at"])
    except IntegrityError as exc:
        if _is_unique_violation(exc, NAME_CONSTRAINT):
            raise _duplicate(agent.name, agent.environment) from None
        raise
    return agent


def agent_delete(*, user: Any, agent: Agent) -> None:
    """Soft delete: the agent disappears and its name is free; versions and runs stay."""
    now = timezone.now()
    Agent.objects.filter(pk=agent.pk, deleted_at__isnull=True).update(
        deleted_at=now, modified_at=now, modified_by=user
    )


def _locked(agent: Agent) -> Agent:
    # Writes to an agent's versions and aliases hold its row: concurrent calls take turns,
    # so versions are numbered without gaps and each alias change records the version the
    # previous one left.
    locked = Agent.objects.select_for_update().get(pk=agent.pk)
    if locked.deleted_at is not None:
        raise NotFound(f"Agent '{agent.pk}' not found.")
    return locked


@transaction.atomic
def version_add(
    *,
    user: Any,
    agent: Agent,
    config: Any | None,
    version_label: str = "",
    notes: str = "",
    loc: Loc = ("body", "config"),
) -> AgentVersion:
    """Append the next version (no config: a copy of the latest). Raises Invalid, Conflict.

    The agent row is locked first, so concurrent calls are numbered 1, 2, 3 … without gaps.
    """
    locked = _locked(agent)
    latest = locked.versions.order_by("-number").first()
    if config is None:
        if latest is None:  # pragma: no cover - every agent is created with version 1
            raise Invalid.at(loc, "the agent has no version to copy: give a config")
        stored = latest.config
    else:
        stored = config_validate(
            user=user,
            environment=locked.environment,
            agent_type=locked.agent_type,
            data=config,
            loc=loc,
        )
    number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    try:
        with transaction.atomic():
            version = AgentVersion.objects.create(
                agent=locked,
                number=number,
                version_label=version_label,
                notes=notes,
                config=stored,
                created_by=user,
            )
    except IntegrityError as exc:
        if _is_unique_violation(exc, "version_label_unique"):
            raise Conflict(
                f"Agent '{locked.name}' already has a version labelled '{version_label}'"
            ) from None
        raise
    Agent.objects.filter(pk=locked.pk).update(modified_at=timezone.now(), modified_by=user)
    return version


# ---------------------------------------------------------------- aliases


def _alias_name(name: str, loc: Loc) -> None:
    problem = selectors.alias_name_problem(name)
    if problem:
        raise Invalid.at(loc, problem)


@transaction.atomic
def alias_set(
    *,
    user: Any,
    agent: Agent,
    name: str,
    version_number: int,
    name_loc: Loc = ("path", "name"),
    version_loc: Loc = ("body", "version"),
) -> VersionAlias:
    """Point alias `name` of `agent` at its version `version_number`, creating or moving
    it, and record the change (none when it already points there). Raises Invalid (the
    name at `name_loc`, an unknown version at `version_loc`) or NotFound."""
    _alias_name(name, name_loc)
    locked = _locked(agent)
    version = locked.versions.filter(number=version_number).defer("config").first()
    if version is None:
        raise Invalid.at(version_loc, f"agent '{locked.name}' has no version {version_number}")
    aliases = locked.aliases.select_related("version").defer("version__config")
    alias = aliases.filter(name__iexact=name).first()
    before = alias.version if alias else None
    if alias is not None and before == version:
        return alias
    now = timezone.now()
    if alias is None:
        alias = VersionAlias(agent=locked, name=name)
    alias.version, alias.updated_at, alias.updated_by = version, now, user
    alias.save()
    AliasChange.objects.create(
        agent=locked,
        name=alias.name,
        from_version=before,
        to_version=version,
        changed_at=now,
        changed_by=user,
    )
    return alias


@transaction.atomic
def alias_roll_back(
    *, user: Any, agent: Agent, name: str, name_loc: Loc = ("path", "name")
) -> VersionAlias:
    """Point alias `name` back at the version it pointed at before its last change, and
    record that as a change of its own. Raises NotFound, or Invalid when the alias has no
    earlier version (it was just created)."""
    _alias_name(name, name_loc)
    locked = _locked(agent)
    alias = locked.aliases.filter(name__iexact=name).first()
    if alias is None:
        raise NotFound(f"Alias '{name}' of agent '{locked.name}' not found.")
    last = (
        locked.alias_changes.filter(name__iexact=name, to_version_id=alias.version_id)
        .select_related("from_version")
        .order_by("-changed_at", "-id")
        .first()
    )
    if last is None or last.from_version is None:
        raise Invalid.at(name_loc, f"alias '{alias.name}' has no earlier version to go back to")
    return alias_set(
        user=user,
        agent=locked,
        name=alias.name,
        version_number=last.from_version.number,
        name_loc=name_loc,
    )


@transaction.atomic
def alias_delete(*, user: Any, agent: Agent, name: str, name_loc: Loc = ("path", "name")) -> None:
    """Delete alias `name` of `agent` and record it. Raises Invalid or NotFound."""
    _alias_name(name, name_loc)
    locked = _locked(agent)
    alias = locked.aliases.filter(name__iexact=name).first()
    if alias is None:
        raise NotFound(f"Alias '{name}' of agent '{locked.name}' not found.")
    alias.delete()
    AliasChange.objects.create(
        agent=locked,
        name=alias.name,
        from_version_id=alias.version_id,
        to_version=None,
        changed_by=user,
    )


# ---------------------------------------------------------------- API clients and tokens


@dataclass(frozen=True)
class IssuedClient:
    client: APIClient
    secret: str  # shown once; only its hash is stored


@transaction.atomic
def api_client_create(
    *, name: str, environment: Environment, actions: Iterable[Action] = ()
) -> IssuedClient:
    """Register a machine caller with its own service user, granted `actions` on the
    environment. The secret is returned once and stored only as a hash."""
    client_id = f"abc_{secrets.token_hex(8)}"
    secret = secrets.token_urlsafe(32)
    user = get_user_model().objects.create_user(username=f"svc-{client_id}", password=None)
    client = APIClient.objects.create(
        name=name,
        client_id=client_id,
        secret_hash=make_password(secret),
        service_user=user,
        environment=environment,
    )
    for action in actions:
        grant(user, action, environment)
    return IssuedClient(client=client, secret=secret)


@dataclass(frozen=True)
class IssuedToken:
    access_token: str
    expires_in: int


class BadCredentials(PermissionDenied):
    status = 401


def token_for_client(*, client_id: str, client_secret: str) -> IssuedToken:
    """client_credentials grant. Raises BadCredentials."""
    client = (
        APIClient.objects.select_related("service_user")
        .filter(client_id=client_id, enabled=True, service_user__is_active=True)
        .first()
    )
    # Hash even for an unknown id so response time does not reveal which ids exist.
    valid = check_password(client_secret, client.secret_hash if client else _dummy_hash())
    if client is None or not valid:
        raise BadCredentials("Invalid client credentials.")
    APIClient.objects.filter(pk=client.pk).update(last_used_at=timezone.now())
    token, lifetime = token_encode(
        user_id=client.service_user_id, environment_id=str(client.environment_id)
    )
    return IssuedToken(token, lifetime)


def token_for_user(*, username: str, password: str) -> IssuedToken:
    """password grant. Raises BadCredentials."""
    user = authenticate(username=username, password=password)
    if user is None:
        raise BadCredentials("Invalid username or password.")
    token, lifetime = token_encode(user_id=user.pk, environment_id=None)
    return IssuedToken(token, lifetime)


@functools.cache
def _dummy_hash() -> str:
    return make_password(uuid.uuid4().hex)
