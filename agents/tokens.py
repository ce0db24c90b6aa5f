"""Signed JWT access tokens (HS256): who the caller is and, for API clients, their environment."""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.crypto import salted_hmac


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
    """The active user a token was issued to, or None (gone, disabled, or a disabled client)."""
    # A disabled API client loses its tokens at once, not when they expire.
    return (
        get_user_model()
        .objects.filter(pk=claims.user_id, is_active=True)
        .exclude(api_client__enabled=False)
        .select_related("api_client")
        .first()
    )
