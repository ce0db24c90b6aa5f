"""Each environment's webhook secret (`whsec_` and 32 random bytes in base64, as Standard
Webhooks writes them), stored encrypted as MCP server headers are
(agents.mcp_registry.secrets, under MCP_SECRETS_KEY).

Shown once: the answer that makes it (a rotation, in the API or the admin) is the only place
it appears; nobody reads it back. An environment gets one the first time it is needed (a
delivery to sign) if nobody made one before, so a receiver that must verify asks for a
rotation, which shows the new one.
"""

from __future__ import annotations

import base64
import secrets
import uuid

from django.db import transaction

from agentbuilder.users import User
from agents.audit.services import CHANGED, audit_record
from agents.mcp_registry.secrets import decrypt_headers, encrypt_headers
from agents.models import Environment

PREFIX = "whsec_"
_HEADER = "webhook-secret"  # the name it is encrypted under, as a header value would be


def secret_new() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


@transaction.atomic
def environment_secret_rotate(*, environment_id: uuid.UUID, user: User | None = None) -> str:
    """A new secret for the environment, in force from the next attempt of any delivery;
    returned this once, recorded in the audit log as `user`'s (only as changed)."""
    secret = secret_new()
    environment = Environment.objects.select_for_update().get(pk=environment_id)
    environment.webhook_secret_encrypted = encrypt_headers({_HEADER: secret})
    environment.save(update_fields=["webhook_secret_encrypted"])
    audit_record(
        user=user,
        action="webhook_secret.rotate",
        obj=environment,
        environment=environment,
        changes={"webhookSecret": {"from": CHANGED, "to": CHANGED}},
    )
    return secret


def environment_secret(*, environment_id: uuid.UUID) -> str:
    """The secret that signs the environment's deliveries, made now if it has none (two
    processes racing agree: only the first write lands). Raises HeadersUnreadable when the
    key changed without a fallback."""
    stored = _stored(environment_id)
    if not stored:
        Environment.objects.filter(pk=environment_id, webhook_secret_encrypted="").update(
            webhook_secret_encrypted=encrypt_headers({_HEADER: secret_new()})
        )
        stored = _stored(environment_id)
    return decrypt_headers(stored)[_HEADER]


def _stored(environment_id: uuid.UUID) -> str:
    value = (
        Environment.objects.filter(pk=environment_id)
        .values_list("webhook_secret_encrypted", flat=True)
        .first()
    )
    return value or ""
