"""Signed JWT access tokens (HS256): who the caller is and, for API clients, their environment."""

from __future__ import annotations

import functools
import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.crypto import salted_hmac

from agents.models import APIClient


@dataclass(frozen=True)
class Claims:
    user_id: int
    environment_id: str | None
    credentials: str  # credentials_stamp of the user when the token was issued


def credentials_stamp(user: Any) -> str:
    """Changes whenever the user's password or its API client's secret does: a token
    carries the stamp it was issued with and dies with it (`user.api_client` loaded)."""
    client = getattr(user, "api_client", None)  # none: Django raises an AttributeError
    secret = f"{user.password}\0{client.secret_hash if client is not None else ''}"
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


def credentials_current(claims: Claims, user: Any) -> bool:
    """Whether the user's password (or client secret) is still the one the token saw."""
    return hmac.compare_digest(str(claims.credentials), credentials_stamp(user))


def token_holder(claims: Claims) -> Any | None:
    """The active user a token was issued to, with its API client if it has one, or None
    (gone, disabled, or a disabled client: it loses its tokens at once, not when they
    expire). Read on every request, from one statement written once: the ORM's form of it
    cost a millisecond of Python a request to build."""
    users = get_user_model()
    row = next(iter(users.objects.raw(_holder_sql(), [claims.user_id])), None)
    if row is None:
        return None
    client_values = [getattr(row, f"client__{name}") for name in _client_columns()]
    client = None
    if client_values[0] is not None:
        client = APIClient.from_db(connection.alias, _client_columns(), client_values)
    users.api_client.related.set_cached_value(row, client)
    return row


@functools.cache
def _client_columns() -> list[str]:
    return [field.attname for field in APIClient._meta.concrete_fields]


@functools.cache
def _holder_sql() -> str:
    quote = connection.ops.quote_name
    user_table = quote(get_user_model()._meta.db_table)
    client_table = quote(APIClient._meta.db_table)
    columns = {f.attname: str(f.column) for f in APIClient._meta.concrete_fields}
    service_user = quote(columns["service_user_id"])
    client = ", ".join(
        f"c.{quote(columns[name])} AS {quote('client__' + name)}" for name in _client_columns()
    )
    # Table and column names from the models' metadata; the user id is a parameter.
    return f"""
        SELECT u.*, {client}
        FROM {user_table} u LEFT JOIN {client_table} c ON c.{service_user} = u.id
        WHERE u.id = %s AND u.is_active AND (c.id IS NULL OR c.enabled)
    """  # noqa: S608
