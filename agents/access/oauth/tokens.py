"""An OAuth access token presented on the API (DOT's opaque token, stored by its SHA-256):
who holds it, until when, for which resources and scopes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.utils import timezone


@dataclass(frozen=True)
class OAuthAccess:
    user_id: int
    expires: datetime
    resources: tuple[str, ...]
    scopes: frozenset[str]

    @property
    def expired(self) -> bool:
        return timezone.now() >= self.expires


def looks_like_jwt(token: str) -> bool:
    """Ours are signed JWTs (three dot-separated parts); DOT's tokens have no dot."""
    return token.count(".") == 2


def oauth_access_find(token: str) -> OAuthAccess | None:
    """The access token's grant, or None for a token never issued, revoked, or issued to no
    user or to a client since removed."""
    checksum = hashlib.sha256(token.encode()).hexdigest()
    # One fixed statement, not the ORM's: building that query cost a request more Python
    # than the rest of its authentication (bench/oauth_tokens.py).
    with connection.cursor() as cursor:
        cursor.execute(FIND_SQL, [checksum])
        row = cursor.fetchone()
    if row is None:
        return None
    user_id, expires, resources, scope = row
    return OAuthAccess(
        user_id, expires, tuple(json.loads(resources) or ()), frozenset(scope.split())
    )


# DOT's table and columns, as its migrations name them.
FIND_SQL = (
    "SELECT user_id, expires, resource::text, scope FROM oauth2_provider_accesstoken"
    " WHERE token_checksum = %s AND user_id IS NOT NULL AND application_id IS NOT NULL LIMIT 1"
)
