"""Writes of the audit log: one record per change, in the change's own transaction (a change
that fails leaves none), with the surface and address of agents.audit.context."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from django.db import models, transaction

from agentbuilder.users import User
from agents.audit.context import current_origin
from agents.models import AuditRecord, Environment

# What a record says of a secret's value, before and after: that it changed, never what.
CHANGED = "changed"
REPR_MAX = 200


def audit_record(
    *,
    user: User | None,
    action: str,
    obj: models.Model,
    environment: Environment | None,
    changes: Mapping[str, Mapping[str, Any]] | None = None,
    object_type: str | None = None,
    object_repr: str | None = None,
) -> AuditRecord:
    """Record that `user` did `action` (`create`, `update`, `delete`, `alias.set` …) to `obj`.
    `object_repr` replaces str(obj) when that may hold a secret. Must be called inside the
    change's transaction."""
    conn = transaction.get_connection()
    assert conn.in_atomic_block, "record in the change's transaction"
    origin = current_origin()
    actor = user if user is not None and user.is_authenticated else None
    return AuditRecord.objects.create(
        environment_id=None if environment is None else environment.pk,
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action,
        object_type=object_type or obj._meta.model_name or "",
        object_id=str(obj.pk),
        object_repr=(str(obj) if object_repr is None else object_repr)[:REPR_MAX],
        changes={k: dict(v) for k, v in (changes or {}).items()},
        ip=origin.ip,
        surface=origin.surface,
    )


def snapshot(obj: models.Model, fields: Iterable[str]) -> dict[str, Any]:
    """`obj`'s values of `fields`, as JSON can hold them (foreign keys by their id)."""
    return {f: _plain(getattr(obj, _attname(obj, f))) for f in fields}


def diff(
    before: Mapping[str, Any], after: Mapping[str, Any], secrets: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """`{field: {"from", "to"}}` of the fields that changed; a secret's values are "changed"."""
    hidden = set(secrets)
    out: dict[str, dict[str, Any]] = {}
    for field, value in after.items():
        old = before.get(field)
        if old == value:
            continue
        out[field] = (
            {"from": CHANGED, "to": CHANGED} if field in hidden else {"from": old, "to": value}
        )
    return out


def created(after: Mapping[str, Any], secrets: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """A new object's fields, each from nothing."""
    return diff(dict.fromkeys(after), after, secrets)


def _attname(obj: models.Model, field: str) -> str:
    try:
        return obj._meta.get_field(field).attname  # type: ignore[union-attr]
    except Exception:  # a property, not a field
        return field


def _plain(value: Any) -> Any:
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def url_shown(url: str) -> str:
    """A URL as a record may show it: credentials in it (user:password@, a query's values,
    which often carry a token) are replaced by "changed"."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{CHANGED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{k}={CHANGED}" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
