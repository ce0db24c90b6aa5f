"""Access and tenancy as the project package and the apps beside agents ask for them.

Environments, their grants and who holds them are the agents app's (agents.access.permissions).
The project package (the API views' request environment) and the apps that never import
agents (guardrails, retrieval: `.importlinter`) need a few answers from it: which
environment a request acts in, which of their environment-scoped rows a user may read,
and where the user may write. They ask through `access()`, declared here; the agents app
provides it at start-up (agents.apps), so the dependency points from agents to here.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, Q, QuerySet

from agentbuilder.users import User


class Access(Protocol):
    @property
    def environment_model(self) -> type[Model]:
        """The model of environments (what an environment-scoped row's foreign key names)."""
        ...

    def request_environment(self, *, user: User, claim: str | None, header: str | None) -> Any:
        """The environment a request acts in: the token's claim, else the X-Environment
        header, else the default. Raises NotFound for one the caller cannot see."""
        ...

    def readable_rows(self, user: User, *, path: str, global_rows: bool) -> Q:
        """A condition on rows whose environment (through `path`) `user` may read; rows of
        no environment too when `global_rows`."""
        ...

    def writable_environments(self, user: User) -> QuerySet[Any]:
        """The environments in which `user` may add, change and delete rows."""
        ...

    def may_write_row(self, user: User, environment: Any) -> bool:
        """Whether `user` may change or delete a row of `environment` (None: global, which
        only superusers change)."""
        ...


_provided: Access | None = None


def provide(access: Access) -> None:
    """Called once, by the app that holds environments and grants (agents.apps)."""
    global _provided
    _provided = access


def access() -> Access:
    if _provided is None:
        raise ImproperlyConfigured("No installed app provides access (the agents app does).")
    return _provided
