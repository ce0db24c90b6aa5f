"""Signed JWT access tokens (HS256): who the caller is and, for API clients, their environment."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.conf import settings


@dataclass(frozen=True)
class Claims:
    user_id: int
    environment_id: str | None


def token_encode(*, user_id: int, environment_id: str | None) -> tuple[str, int]:
    """A token for `user_id` and its lifetime in seconds."""
    now = datetime.now(UTC)
    lifetime = settings.JWT_LIFETIME
    payload: dict[str, Any] = {
        "iss": settings.JWT_ISSUER,
        "sub": str(user_id),
        "iat": now,
        "exp": now + lifetime,
        "jti": uuid.uuid4().hex,
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
        options={"require": ["exp", "iat", "sub", "iss"]},
    )
    try:
        user_id = int(payload["sub"])
    except ValueError as exc:
        raise jwt.InvalidTokenError("bad subject") from exc
    return Claims(user_id=user_id, environment_id=payload.get("env"))
