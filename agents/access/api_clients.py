"""API clients: machine callers, each a service user of its own in one environment."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction

from agents.access.permissions import Action, grant
from agents.models import APIClient, Environment


@dataclass(frozen=True)
class IssuedClient:
    client: APIClient
    secret: str  # shown once; only its hash is stored


@dataclass(frozen=True)
class RateLimits:
    """requestsPerMinute and tokensPerMinute (agents.access.rate_limits); None: no limit."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


@transaction.atomic
def api_client_create(
    *,
    name: str,
    environment: Environment,
    actions: Iterable[Action] = (),
    limits: RateLimits = RateLimits(),
) -> IssuedClient:
    """Register a machine caller with its own service user, granted `actions` on the
    environment, under `limits`. The secret is returned once and stored only as a hash."""
    client_id = f"abc_{secrets.token_hex(8)}"
    secret = secrets.token_urlsafe(32)
    user = get_user_model().objects.create_user(username=f"svc-{client_id}", password=None)
    client = APIClient.objects.create(
        name=name,
        client_id=client_id,
        secret_hash=make_password(secret),
        service_user=user,
        environment=environment,
        requests_per_minute=limits.requests_per_minute,
        tokens_per_minute=limits.tokens_per_minute,
    )
    for action in actions:
        grant(user, action, environment)
    return IssuedClient(client=client, secret=secret)
