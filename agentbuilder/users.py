"""The type of a caller: the project's user model, as the platform's code reads one.

django-stubs types `request.user` as `AbstractBaseUser | AnonymousUser`: AbstractBaseUser
declares neither `is_superuser` nor permissions, and the ORM's lookups (`created_by=user`)
want the model itself. Every function that acts for a caller takes `User`, the model
AUTH_USER_MODEL names (Django's own: this project does not swap it). It is declared in the
project package so that guardrails and retrieval name it without importing agents
(.importlinter). A request is narrowed to it once: `ApiRequest` for the API's views
(agentbuilder.api.views), `request_user` for the admin's.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest

__all__ = ["User", "request_user"]


def request_user(request: HttpRequest) -> User:
    """The user of a request that only users reach (the admin's pages: staff only)."""
    user = request.user
    assert isinstance(user, User), "the admin is reached only by authenticated users"
    return user
