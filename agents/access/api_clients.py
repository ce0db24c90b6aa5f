"""API clients: machine callers, each a service user of its own in one environment."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction

from agentbuilder.users import User
from agents.access.grants import permission_grant
from agents.access.permissions import Action
from agents.audit.services import CHANGED, audit_record, created, diff, snapshot
from agents.models import APIClient, Environment

# What a client's records show of it; its secret only as "changed".
AUDITED_FIELDS = (
    "name",
    "client_id",
    "environment",
    "enabled",
    "requests_per_minute",
    "tokens_per_minute",
)


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
    user: User | None = None,
) -> IssuedClient:
    """Register a machine caller with its own service user, granted `actions` on the
    environment, under `limits`, by `user`. The secret is returned once and stored only as
    a hash."""
    client_id = f"abc_{secrets.token_hex(8)}"
    secret = secrets.token_urlsafe(32)
    service_user = get_user_model().objects.create_user(username=f"svc-{client_id}", password=None)
    client = APIClient.objects.create(
        name=name,
        client_id=client_id,
        secret_hash=make_password(secret),
        service_user=service_user,
        environment=environment,
        requests_per_minute=limits.requests_per_minute,
        tokens_per_minute=limits.tokens_per_minute,
    )
    audit_record(
        user=user,
        action="create",
        obj=client,
        environment=environment,
        changes=created(snapshot(client, AUDITED_FIELDS)) | _secret_changed(),
    )
    for action in actions:
        permission_grant(user=user, holder=service_user, codename=action, target=environment)
    return IssuedClient(client=client, secret=secret)


@transaction.atomic
def api_client_update(
    *, user: User | None, client: APIClient, name: str, enabled: bool, limits: RateLimits
) -> APIClient:
    """Rename, enable or disable a client, or change its limits."""
    before = snapshot(client, AUDITED_FIELDS)
    client.name, client.enabled = name, enabled
    client.requests_per_minute = limits.requests_per_minute
    client.tokens_per_minute = limits.tokens_per_minute
    client.save()
    changed = diff(before, snapshot(client, AUDITED_FIELDS))
    if changed:
        audit_record(
            user=user,
            action="update",
            obj=client,
            environment=client.environment,
            changes=changed,
        )
    return client


@transaction.atomic
def api_client_secret_rotate(*, user: User | None, client: APIClient) -> str:
    """A new secret for `client`, returned once; the old one, and every token issued for it
    (signed with its hash, agents.access.tokens), stop working."""
    secret = secrets.token_urlsafe(32)
    client.secret_hash = make_password(secret)
    client.save(update_fields=["secret_hash"])
    audit_record(
        user=user,
        action="secret.rotate",
        obj=client,
        environment=client.environment,
        changes=_secret_changed(),
    )
    return secret


def _secret_changed() -> dict[str, dict[str, str]]:
    return {"secret": {"from": CHANGED, "to": CHANGED}}
