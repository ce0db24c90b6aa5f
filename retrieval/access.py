"""What retrieval asks of the app that holds environments, their grants and agents.

A document belongs to an environment and its permissions are the environment's grants
(READ to list, see and search, CREATE to upload, EDIT to change or re-ingest, DELETE to
delete); the admin's "Try retrieval" also offers the RAG agents a user may read, with
their settings. Those are the agents app's, which retrieval never imports
(`.importlinter`): retrieval's API and admin ask `document_access()`, declared here, and
the agents app provides it at start-up (agents.apps). The request's environment and the
model of environments come from agentbuilder.access, as for every app.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet

from agentbuilder.users import User
from retrieval.configs import RagSettings


class Grant(StrEnum):
    """What a grant on an environment allows on its documents."""

    READ = "read"
    CREATE = "create"
    EDIT = "edit"
    DELETE = "delete"


class DocumentAccess(Protocol):
    def environments_with(self, user: User, grant: Grant) -> QuerySet[Any]:
        """The environments on which `user` holds `grant`."""
        ...

    def require(self, user: User, environment: Any, grant: Grant) -> None:
        """Nothing if `user` holds `grant` on `environment`. Raises PermissionDenied."""
        ...

    def rag_agents(self, user: User) -> QuerySet[Any]:
        """The live RAG agents `user` may read (rows with `name` and `environment`)."""
        ...

    def rag_settings(self, agent: Any) -> RagSettings:
        """The retrieval settings of `agent`'s latest version."""
        ...


_provided: DocumentAccess | None = None


def provide(access: DocumentAccess) -> None:
    """Called once, by the app that holds environments and grants (agents.apps)."""
    global _provided
    _provided = access


def document_access() -> DocumentAccess:
    if _provided is None:
        raise ImproperlyConfigured(
            "No installed app provides document access (the agents app does)."
        )
    return _provided
