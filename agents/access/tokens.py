"""Signed JWT access tokens (HS256): who the caller is and, for API clients, their
environment; issued for a client's secret or a user's password, checked on every request."""

from __future__ import annotations

import functools
import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.db import connection
from django.utils import timezone
from django.utils.crypto import salted_hmac

from agentbuilder.db import columns_sql, one_row
from agentbuilder.errors import PermissionDenied
from agentbuilder.users import User
from agents.access.environments import DEFAULT_ENVIRONMENT
from agents.models import APIClient, Environment, UserLimits


@dataclass(frozen=True)
class Claims:
    user_id: int
    environment_id: str | None
    credentials: str  # credentials_stamp of the user when the token was issued
    # An OAuth access token's scopes (agents.access.oauth.resources); None: a JWT from
    # POST /v1/auth/token, which may do all its holder may.
    scopes: frozenset[str] | None = None


def credentials_stamp(user: User) -> str:
    """Changes whenever the user's password or its API client's secret does: a token
    carries the stamp it was issued with and dies with it (`user.api_client` loaded)."""
    client = getattr(user, "api_client", None)  # none: Django raises an AttributeError
    secret = f"{user.password}\0{client.secret_hash if client is not None else ''}"
    # The salt keeps the module's first name: changing it would revoke every live token.
    return salted_hmac(
        "agents.tokens.credentials", secret, secret=settings.JWT_SIGNING_KEY, algorithm="sha256"
    ).hexdigest()[:32]


def token_encode(*, user_id: int, environment_id: str | None) -> tuple[str, int]:
    """A token for `user_id` and its lifetime in seconds."""
    user = get_user_model().objects.select_related("api_client").get(pk=user_id)
    now = datetime.now(UTC)
    lifetime = settings.JWT_LIFETIME
    payload: dict[str, Any] = {
        "iss": settings.JWT_ISSUER,
        "sub": str(user_id),
        "iat": now,
        "exp": now + lifetime,
        "jti": uuid.uuid4().hex,
        "crd": credentials_stamp(user),
    }
    if environment_id is not None:
        payload["env"] = environment_id
    token = jwt.encode(payload, settings.JWT_SIGNING_KEY, algorithm="HS256")
    return token, int(lifetime.total_seconds())


def token_decode(token: str) -> Claims:
    """The claims of a valid token; raises jwt.InvalidTokenError otherwise."""
    payload = jwt.decode(
        token,
        settings.JWT_SIGNING_KEY,
        algorithms=["HS256"],
        issuer=settings.JWT_ISSUER,
        options={"require": ["exp", "iat", "sub", "iss", "crd"]},
    )
    try:
        user_id = int(payload["sub"])
    except ValueError as exc:
        raise jwt.InvalidTokenError("bad subject") from exc
    return Claims(user_id=user_id, environment_id=payload.get("env"), credentials=payload["crd"])


def credentials_current(claims: Claims, user: User) -> bool:
    """Whether the user's password (or client secret) is still the one the token saw."""
    return hmac.compare_digest(str(claims.credentials), credentials_stamp(user))


def token_holder(claims: Claims) -> User | None:
    """The active user a token was issued to, with its API client and its rate limits if it
    has them, or None (gone, disabled, or a disabled client: it loses its tokens at once,
    not when they expire). Read on every request, from one statement written once: the
    ORM's form of it cost a millisecond of Python a request to build.

    The same statement reads the token's environment (its claim, else `default`), which
    nearly every request resolves next: `user.token_environment`, None when it is gone
    (agents.access.environments.environment_resolve then says so)."""
    users = get_user_model()
    params = [_claimed_environment(claims), DEFAULT_ENVIRONMENT, claims.user_id]
    shapes = (users, ("client__", APIClient), ("env__", Environment), ("limits__", UserLimits))
    found = one_row(_holder_sql(), params, *shapes)
    if found is None:
        return None
    user, client, environment, limits = found
    users.api_client.related.set_cached_value(user, client)
    # Its rate limits too, row or none: the throttle reads them on every request.
    users.rate_limits.related.set_cached_value(user, limits)
    user.token_environment = environment
    return user


def _claimed_environment(claims: Claims) -> uuid.UUID | None:
    try:
        return uuid.UUID(claims.environment_id) if claims.environment_id else None
    except ValueError:  # signed by us, so never; environment_resolve reports it
        return None


@functools.cache
def _holder_sql() -> str:
    quote = connection.ops.quote_name

    def column(model: Any, attname: str) -> str:
        return quote(
            next(str(f.column) for f in model._meta.concrete_fields if f.attname == attname)
        )

    user_table = quote(get_user_model()._meta.db_table)
    client_table = quote(APIClient._meta.db_table)
    env_table = quote(Environment._meta.db_table)
    limits_table = quote(UserLimits._meta.db_table)
    service_user = column(APIClient, "service_user_id")
    limits_user = column(UserLimits, "user_id")
    env_id, env_name = column(Environment, "id"), column(Environment, "name")
    # Table and column names from the models' metadata; the values are parameters.
    return f"""
        SELECT {columns_sql(get_user_model(), "u")}, {columns_sql(APIClient, "c", "client__")},
            {columns_sql(Environment, "e", "env__")}, {columns_sql(UserLimits, "l", "limits__")}
        FROM {user_table} u
        LEFT JOIN {client_table} c ON c.{service_user} = u.id
        LEFT JOIN {limits_table} l ON l.{limits_user} = u.id
        LEFT JOIN {env_table} e ON e.{env_id} = COALESCE(
            %s::uuid, (SELECT d.{env_id} FROM {env_table} d WHERE d.{env_name} = %s)
        )
        WHERE u.id = %s AND u.is_active AND (c.id IS NULL OR c.enabled)
    """  # noqa: S608


# ---------------------------------------------------------------- grants


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
