"""Who may do what to which agent: django-guardian object permissions.

A permission is held on an agent, or on its environment (then it holds for every agent
in it), by a user directly or through a group. Nothing is granted by default. Querysets
are narrowed here, so a selector never returns a row its caller may not act on.

Grants are written with guardian (`grant`, the admin's object-permission screens) into
its direct foreign-key tables; checks read those tables with EXISTS subqueries. That is
one query per check and a few hundred microseconds of Python, where guardian's generic
`get_objects_for_user` spent ~5 ms building its querysets on every invocation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet
from guardian.shortcuts import assign_perm

from agentbuilder.db import columns_sql, one_model
from agentbuilder.errors import PermissionDenied
from agentbuilder.users import User
from agents.models import (
    Agent,
    AgentGroupObjectPermission,
    AgentUserObjectPermission,
    Environment,
    EnvironmentGroupObjectPermission,
    EnvironmentUserObjectPermission,
)


class Action(StrEnum):
    READ = "view_agent"
    CREATE = "add_agent"
    EDIT = "change_agent"
    INVOKE = "invoke_agent"
    DELETE = "delete_agent"
    AUDIT = "audit_agent"  # read every caller's runs and threads, not only one's own
    APPROVE = "approve_agent"  # decide the tool calls of any caller's runs that wait for one


def _held(actions: tuple[Action, ...]) -> dict[str, Any]:
    """The permission filter of any of `actions`: one subquery whatever their number."""
    if len(actions) == 1:
        return {"permission__codename": actions[0]}
    return {"permission__codename__in": actions}


def _on_environment(user: User, action: Action | tuple[Action, ...], environment: Any) -> Q:
    """Held on `environment` (an OuterRef or a value), by the user or one of its groups."""
    held = _held(action if isinstance(action, tuple) else (action,))
    return Exists(
        EnvironmentUserObjectPermission.objects.filter(
            content_object=environment, user=user, **held
        )
    ) | Exists(
        EnvironmentGroupObjectPermission.objects.filter(
            content_object=environment, group__user=user, **held
        )
    )


def may(user: User, *actions: Action) -> Q:
    """A condition on Agent rows: `user` holds one of `actions` on the agent or its
    environment."""
    if user.is_superuser:
        return Q(pk__isnull=False)
    agent = OuterRef("pk")
    held = _held(actions)
    return (
        Exists(AgentUserObjectPermission.objects.filter(content_object=agent, user=user, **held))
        | Exists(
            AgentGroupObjectPermission.objects.filter(
                content_object=agent, group__user=user, **held
            )
        )
        | _on_environment(user, actions, OuterRef("environment"))
    )


def may_flag(user: User, action: Action) -> ExpressionWrapper:
    """`may` as a boolean column, to annotate rows already narrowed to another action."""
    return ExpressionWrapper(may(user, action), output_field=BooleanField())


def agents_with(user: User, action: Action) -> QuerySet[Agent]:
    """Live agents on which `user` holds `action`, directly or through their environment."""
    return Agent.objects.filter(may(user, action), deleted_at__isnull=True)


def environments_with(user: User, action: Action) -> QuerySet[Environment]:
    """Environments on which `user` holds `action` (for all of their agents)."""
    if user.is_superuser:
        return Environment.objects.all()
    return Environment.objects.filter(_on_environment(user, action, OuterRef("pk")))


def held_on_some_environment(user: User, actions: tuple[Action, ...]) -> set[Action]:
    """Which of `actions` `user` holds on at least one environment, in one query (a page
    that offers what its user may do asks it once, not once an action)."""
    if user.is_superuser:
        return set(actions)
    held = _held(actions)
    direct = EnvironmentUserObjectPermission.objects.filter(user=user, **held)
    grouped = EnvironmentGroupObjectPermission.objects.filter(group__user=user, **held)
    codenames = direct.values_list("permission__codename", flat=True).union(
        grouped.values_list("permission__codename", flat=True)
    )
    return {Action(codename) for codename in codenames}


def holds_on_environment(user: User, environment: Environment, action: Action) -> bool:
    """Whether `user` holds `action` on `environment` (for all of its agents)."""
    return environments_with(user, action).filter(pk=environment.pk).exists()


def require_on_environment(user: User, environment: Environment, action: Action) -> None:
    """Nothing if `user` holds `action` on `environment`. Raises PermissionDenied."""
    if not holds_on_environment(user, environment, action):
        raise PermissionDenied(
            f"You do not have {action.name} permission in environment '{environment.name}'."
        )


def environments_visible(user: User) -> QuerySet[Environment]:
    """Environments where `user` holds any agent permission, on it or on one of its agents."""
    if user.is_superuser:
        return Environment.objects.all()
    env = OuterRef("pk")
    return Environment.objects.filter(
        Exists(EnvironmentUserObjectPermission.objects.filter(content_object=env, user=user))
        | Exists(
            EnvironmentGroupObjectPermission.objects.filter(content_object=env, group__user=user)
        )
        | Exists(
            AgentUserObjectPermission.objects.filter(
                content_object__environment=env, user=user, content_object__deleted_at=None
            )
        )
        | Exists(
            AgentGroupObjectPermission.objects.filter(
                content_object__environment=env,
                group__user=user,
                content_object__deleted_at=None,
            )
        )
    )


def grant(holder: User | Group, action: Action, target: Agent | Environment) -> None:
    """Give a user or a group `action` on an agent or on every agent of an environment."""
    assign_perm(str(action), holder, target)


# ---------------------------------------------------------------- the invoke path


@dataclass(frozen=True)
class AgentHeld:
    """A live agent and the Action codenames a caller holds on it (or its environment)."""

    agent: Agent
    held: frozenset[str]


def agent_with_held(user: User, agent_id: Any) -> AgentHeld | None:
    """The live agent `agent_id` and the Action codenames `user` holds on it or its
    environment (directly or through a group), from one statement written once.

    The invoke path's check. The ORM's form of these eight EXISTS (`may`, `may_flag`)
    costs ~10 ms of Python to build and compile on every call, most of an invocation's
    CPU; this is the same read of the same grant tables, every call, without that."""
    return _found(user, _held_sql(by_name=False), {"agent": agent_id, "user": user.pk})


def agent_with_held_by_name(user: User, environment_id: Any, name: str) -> AgentHeld | None:
    """`agent_with_held` of the live agent of environment `environment_id` named `name`
    (ignoring case, as names are unique), from the same one statement: a route that names
    the agent (A2A, MCP) reads it and the caller's grants in one round trip."""
    params = {"environment": environment_id, "name": name, "user": user.pk}
    return _found(user, _held_sql(by_name=True), params)


def _found(user: User, sql: str, params: dict[str, Any]) -> AgentHeld | None:
    agent = one_model(Agent, sql, params)
    if agent is None:
        return None
    codenames = agent.__dict__.pop("held")  # the statement's extra column, not the model's
    return AgentHeld(agent, frozenset(Action) if user.is_superuser else frozenset(codenames))


# Which live agent a statement of the invoke path reads: by id, or by name in an environment
# (the unique index on the lower-cased name and the environment answers it).
BY_ID = "a.id = %(agent)s"
BY_NAME = "a.environment_id = %(environment)s AND lower(a.name) = lower(%(name)s)"


@functools.cache
def _held_sql(*, by_name: bool) -> str:
    agents = connection.ops.quote_name(Agent._meta.db_table)
    # The table's name from the model's metadata; every value is a parameter.
    return f"""
        SELECT {columns_sql(Agent, "a")}, {held_array("a")} AS held
        FROM {agents} a
        WHERE {BY_NAME if by_name else BY_ID} AND a.deleted_at IS NULL
    """  # noqa: S608


@functools.cache
def held_array(agent: str) -> str:
    """SQL for the Action codenames user `%(user)s` holds on the agent aliased `agent`,
    directly or through a group, on it or on its environment: an array."""
    user_groups = get_user_model().groups.through._meta.db_table
    tables = {
        "permission": Permission._meta.db_table,
        "agent_user": AgentUserObjectPermission._meta.db_table,
        "agent_group": AgentGroupObjectPermission._meta.db_table,
        "env_user": EnvironmentUserObjectPermission._meta.db_table,
        "env_group": EnvironmentGroupObjectPermission._meta.db_table,
        "user_groups": user_groups,
    }
    t = {name: connection.ops.quote_name(table) for name, table in tables.items()}
    a = agent
    # Table names from the models' metadata; every value is a parameter.
    return f"""ARRAY(
            SELECT p.codename FROM {t["permission"]} p WHERE p.id IN (
                SELECT x.permission_id FROM {t["agent_user"]} x
                 WHERE x.content_object_id = {a}.id AND x.user_id = %(user)s
                UNION ALL
                SELECT x.permission_id FROM {t["agent_group"]} x
                  JOIN {t["user_groups"]} ug ON ug.group_id = x.group_id
                 WHERE x.content_object_id = {a}.id AND ug.user_id = %(user)s
                UNION ALL
                SELECT x.permission_id FROM {t["env_user"]} x
                 WHERE x.content_object_id = {a}.environment_id AND x.user_id = %(user)s
                UNION ALL
                SELECT x.permission_id FROM {t["env_group"]} x
                  JOIN {t["user_groups"]} ug ON ug.group_id = x.group_id
                 WHERE x.content_object_id = {a}.environment_id AND ug.user_id = %(user)s
            )
        )"""  # noqa: S608


# ------------------------------------------------- rows that belong to an environment


def in_environments_with(
    user: User, action: Action, *, path: str = "environment", global_rows: bool = False
) -> Q:
    """A condition on rows whose environment (reached through `path`) `user` holds
    `action` on; rows of no environment (global catalog rows) too when `global_rows`.

    The API's rule for API clients, guardrails, MCP servers and documents, written once
    for the admin's querysets: a global row is read in every environment, and changed by
    superusers alone (`may_change_row`)."""
    if user.is_superuser:
        return Q()
    held = Q(**{f"{path}__in": environments_with(user, action).values("pk")})
    return held | Q(**{f"{path}__isnull": True}) if global_rows else held


def may_change_row(user: User, action: Action, environment: Environment | None) -> bool:
    """Whether `user` may change (as `action`) a row of `environment`; None is global."""
    if user.is_superuser:
        return True
    return environment is not None and holds_on_environment(user, environment, action)
