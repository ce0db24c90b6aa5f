"""Who may do what to which agent: django-guardian object permissions.

A permission is held on an agent, or on its environment (then it holds for every agent
in it), by a user directly or through a group. Nothing is granted by default. Querysets
are narrowed here, so a selector never returns a row its caller may not act on.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db.models import Exists, OuterRef, Q, QuerySet
from guardian.shortcuts import assign_perm, get_objects_for_user

from agents.models import (
    AGENT_SCOPE_PERMISSIONS,
    Agent,
    AgentGroupObjectPermission,
    AgentUserObjectPermission,
    Environment,
    EnvironmentGroupObjectPermission,
    EnvironmentUserObjectPermission,
)

User = AbstractBaseUser | AnonymousUser


class Action(StrEnum):
    READ = "view_agent"
    CREATE = "add_agent"
    EDIT = "change_agent"
    INVOKE = "invoke_agent"
    DELETE = "delete_agent"


AGENT_CODENAMES = [codename for codename, _ in AGENT_SCOPE_PERMISSIONS]


def environments_with(user: Any, action: Action) -> QuerySet[Environment]:
    """Environments on which `user` holds `action` (for all of their agents)."""
    return get_objects_for_user(
        user, str(action), Environment.objects.all(), accept_global_perms=False
    )


def agents_with(user: Any, action: Action) -> QuerySet[Agent]:
    """Live agents on which `user` holds `action`, directly or through their environment."""
    alive = Agent.objects.filter(deleted_at__isnull=True)
    if user.is_superuser:
        return alive
    direct = get_objects_for_user(user, str(action), alive, accept_global_perms=False)
    return alive.filter(
        Q(pk__in=direct.values("pk"))
        | Q(environment__in=environments_with(user, action).values("pk"))
    )


def environments_visible(user: Any) -> QuerySet[Environment]:
    """Environments where `user` holds any agent permission, on it or on one of its agents."""
    if user.is_superuser:
        return Environment.objects.all()
    groups = Group.objects.filter(user=user).values("pk")
    env = OuterRef("pk")
    return Environment.objects.filter(
        Exists(EnvironmentUserObjectPermission.objects.filter(content_object=env, user=user))
        | Exists(
            EnvironmentGroupObjectPermission.objects.filter(content_object=env, group__in=groups)
        )
        | Exists(
            AgentUserObjectPermission.objects.filter(
                content_object__environment=env, user=user, content_object__deleted_at=None
            )
        )
        | Exists(
            AgentGroupObjectPermission.objects.filter(
                content_object__environment=env, group__in=groups, content_object__deleted_at=None
            )
        )
    )


def grant(holder: Any, action: Action, target: Agent | Environment) -> None:
    """Give a user or a group `action` on an agent or on every agent of an environment."""
    assign_perm(str(action), holder, target)
