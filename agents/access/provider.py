"""The agents app's side of agentbuilder.access: the request's environment and the
environment grants (agents.access.permissions) for the project package and the apps that do
not import agents. Provided at start-up (agents.apps)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agentbuilder.users import User
from agents.access.environments import environment_resolve
from agents.access.permissions import (
    Action,
    environments_with,
    in_environments_with,
    may_change_row,
)
from agents.models import Environment

# What adding, changing and deleting an environment-scoped row needs.
WRITE = Action.EDIT


class EnvironmentAccess:
    environment_model = Environment

    def request_environment(
        self, *, user: User, claim: str | None, header: str | None
    ) -> Environment:
        return environment_resolve(user=user, claim=claim, header=header)

    def readable_rows(self, user: User, *, path: str, global_rows: bool) -> Q:
        return in_environments_with(user, Action.READ, path=path, global_rows=global_rows)

    def writable_environments(self, user: User) -> QuerySet[Environment]:
        return environments_with(user, WRITE)

    def may_write_row(self, user: User, environment: Environment | None) -> bool:
        return may_change_row(user, WRITE, environment)
