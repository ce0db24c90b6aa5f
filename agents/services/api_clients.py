"""Writes of API clients (machine callers with their own service user) and the tokens
issued to clients and users."""

from __future__ import annotations

import functools
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.db import transaction
from django.utils import timezone

from agentbuilder.errors import PermissionDenied
from agents.models import APIClient, Environment
from agents.permissions import Action, grant
from agents.tokens import token_encode


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
