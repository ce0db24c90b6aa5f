"""Header values of registered MCP servers, encrypted at rest with Fernet.

The key is derived (HKDF-SHA256) from MCP_SECRETS_KEY, which defaults to SECRET_KEY; keys in
MCP_SECRETS_KEY_FALLBACKS still decrypt, so a key can be rotated without losing headers.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class HeadersUnreadable(Exception):
    """Stored headers could not be decrypted: the key changed without a fallback."""


def encrypt_headers(headers: Mapping[str, str]) -> str:
    if not headers:
        return ""
    return _fernet(*_keys()).encrypt(json.dumps(dict(headers)).encode()).decode()


def decrypt_headers(token: str) -> dict[str, str]:
    """The headers behind `token`; raises HeadersUnreadable."""
    if not token:
        return {}
    try:
        data = json.loads(_fernet(*_keys()).decrypt(token.encode()))
    except (InvalidToken, ValueError):
        raise HeadersUnreadable(
            "the stored headers cannot be decrypted with MCP_SECRETS_KEY: set the key they "
            "were written with, or save the headers again"
        ) from None
    return {str(k): str(v) for k, v in data.items()}


def _keys() -> tuple[str, ...]:
    return (settings.MCP_SECRETS_KEY, *settings.MCP_SECRETS_KEY_FALLBACKS)


@functools.lru_cache(maxsize=8)
def _fernet(*secrets: str) -> MultiFernet:
    return MultiFernet([Fernet(_derive(secret)) for secret in secrets])


def _derive(secret: str) -> bytes:
    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"agentbuilder", info=b"mcp-server-headers"
    ).derive(secret.encode())
    return base64.urlsafe_b64encode(key)
