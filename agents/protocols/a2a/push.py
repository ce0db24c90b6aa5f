"""A2A push notifications (docs/api.md#a2a): a task's push-notification configs kept as
`PushConfig` rows of its run, and what their deliveries carry. A config is an endpoint of
the webhooks' delivery machinery (agents.webhooks): its deliveries are made with the run's
end by the same trigger, sent, signed, retried and logged the same way, with the A2A
payload instead of Standard Webhooks' (1.0: a StreamResponse holding the task, as the SDK's
sender posts it; 0.3: the Task) and the config's `token` as `X-A2A-Notification-Token`
(its authentication as `Authorization`), as the specification asks.

The token is the client's, answered back by get and list; the authentication's credentials
are write-only, as MCP server headers are: answers name the scheme alone.
"""

from __future__ import annotations

import uuid
from typing import Any

from a2a.compat.v0_3 import conversions
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import PushNotificationNotSupportedError
from django.conf import settings
from google.protobuf.json_format import MessageToDict

from agentbuilder.errors import Invalid
from agents.mcp_registry.secrets import decrypt_headers, encrypt_headers
from agents.models import DeliveryFormat, PushConfig, Run
from agents.protocols.a2a.dialects import Dialect
from agents.protocols.a2a.encoder import result_json, run_task
from agents.protocols.a2a.errors import Path, invalid_params
from agents.webhooks.guard import webhook_url_check

TOKEN_HEADER = "X-A2A-Notification-Token"  # noqa: S105 - the specification's header name
FORMATS = {Dialect.V1: DeliveryFormat.A2A_V1, Dialect.V03: DeliveryFormat.A2A_V03}


def push_check(config: pb.TaskPushNotificationConfig, url_at: Path) -> None:
    """Refuse a config before anything is written: -32003 where webhooks are off, -32602 at
    `url_at` for a URL the address guard refuses. Raises A2AError."""
    if not settings.WEBHOOKS_ENABLED:
        raise PushNotificationNotSupportedError(
            "Push notifications are turned off on this server (WEBHOOKS_ENABLED): stream the "
            "task, or poll it with tasks/get (GetTask)"
        )
    try:
        webhook_url_check(config.url, url_at)
    except Invalid as exc:
        raise invalid_params([(url_at, exc.errors[0].msg)]) from None


def push_config_set(
    *, run_id: uuid.UUID, config: pb.TaskPushNotificationConfig, dialect: Dialect
) -> pb.TaskPushNotificationConfig:
    """Keep `config` for the run (checked by `push_check`), replacing the one of the same id;
    without an id it gets one. Its deliveries go out in `dialect`'s shape."""
    config_id = config.id or uuid.uuid4().hex
    headers = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    auth = config.authentication if config.HasField("authentication") else None
    if auth is not None and auth.scheme and auth.credentials:
        headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
    PushConfig.objects.update_or_create(
        run_id=run_id,
        config_id=config_id,
        defaults={
            "url": config.url,
            "dialect": FORMATS[dialect],
            "headers_encrypted": encrypt_headers(headers),
            "authentication": {"scheme": auth.scheme} if auth is not None and auth.scheme else None,
        },
    )
    found = push_config_get(run_id=run_id, config_id=config_id)
    assert found is not None
    return found


def push_config_get(
    *, run_id: uuid.UUID, config_id: str = ""
) -> pb.TaskPushNotificationConfig | None:
    """The run's config `config_id` (without one: its first), or None."""
    configs = PushConfig.objects.filter(run_id=run_id)
    if config_id:
        configs = configs.filter(config_id=config_id)
    row = configs.first()
    return None if row is None else _proto(row)


def push_config_list(*, run_id: uuid.UUID) -> list[pb.TaskPushNotificationConfig]:
    return [_proto(row) for row in PushConfig.objects.filter(run_id=run_id)]


def push_config_delete(*, run_id: uuid.UUID, config_id: str) -> bool:
    """Remove it (its deliveries made already stay in the log, and are still sent)."""
    deleted, _ = PushConfig.objects.filter(run_id=run_id, config_id=config_id).delete()
    return bool(deleted)


def _proto(row: PushConfig) -> pb.TaskPushNotificationConfig:
    config = pb.TaskPushNotificationConfig(id=row.config_id, task_id=str(row.run_id), url=row.url)
    token = decrypt_headers(row.headers_encrypted).get(TOKEN_HEADER)
    if token:
        config.token = token
    if row.authentication:
        config.authentication.scheme = str(row.authentication.get("scheme", ""))
    return config


def config_json(config: pb.TaskPushNotificationConfig, dialect: Dialect) -> dict[str, Any]:
    if dialect is Dialect.V1:
        return MessageToDict(config)
    compat = conversions.to_compat_task_push_notification_config(config)
    return compat.model_dump(mode="json", by_alias=True, exclude_none=True)


def configs_json(configs: list[pb.TaskPushNotificationConfig], dialect: Dialect) -> Any:
    """ListTaskPushNotificationConfigs' result (1.0: an object with `configs`; 0.3: a list)."""
    if dialect is Dialect.V1:
        return MessageToDict(pb.ListTaskPushNotificationConfigsResponse(configs=configs))
    return [config_json(c, dialect) for c in configs]


# ---------------------------------------------------------------- what a delivery carries
# (agents.webhooks.payloads.PAYLOADS names these)


def push_payload_v1(run: Run, event: str) -> dict[str, Any]:
    """The task as a StreamResponse, as 1.0's push notifications carry it."""
    return result_json(pb.StreamResponse(task=run_task(run)), Dialect.V1)


def push_payload_v03(run: Run, event: str) -> dict[str, Any]:
    """The task, as 0.3's push notifications carry it."""
    return result_json(run_task(run), Dialect.V03)
