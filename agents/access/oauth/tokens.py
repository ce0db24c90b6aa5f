"""An OAuth access token presented on the API (DOT's opaque token, stored by its SHA-256):
who holds it, until when, for which resources and scopes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from oauth2_provider.models import AccessToken


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
    row = (
        AccessToken.objects.filter(
            token_checksum=checksum, user__isnull=False, application__isnull=False
        )
        .values_list("user_id", "expires", "resource", "scope")
        .first()
    )
    if row is None:
        return None
    user_id, expires, resources, scope = row
    return OAuthAccess(user_id, expires, tuple(resources or ()), frozenset(scope.split()))
