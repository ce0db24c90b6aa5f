"""Sending the deliveries that are due (docs/architecture.md#webhooks).

A delivery is a row (`WebhookDelivery`) made by the database with the event; a pass claims
the due ones with `FOR UPDATE SKIP LOCKED` (so every server and worker may run passes, and
none sends what another has taken), pushing their `next_attempt_at` past the time an
attempt can take: a process that dies mid-attempt leaves the delivery to be taken again
then. The attempts go out on a thread pool with no database connection; the pass then
writes each outcome: `delivered` on a 2xx, else the next attempt after an exponential
backoff (Celery's own arithmetic), or `failed` once WEBHOOK_RETRY_SECONDS have passed since
the event. The same delivery is signed again at each attempt (a fresh timestamp) with the
same `webhook-id`, so a receiver drops what it has seen.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import connection
from standardwebhooks import Webhook

from agents.mcp_client.ssrf import UrlRefused, check_url, policy_from_settings
from agents.mcp_registry.secrets import HeadersUnreadable, decrypt_headers
from agents.models import DeliveryStatus, Run, WebhookDelivery
from agents.webhooks.payloads import PAYLOADS
from agents.webhooks.secret import environment_secret

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 1000  # of a receiver's answer, kept on the delivery
USER_AGENT = "agentbuilder-webhooks"


@dataclass(frozen=True)
class Claimed:
    id: uuid.UUID
    environment_id: uuid.UUID
    run_id: uuid.UUID | None
    event: str
    format: str
    url: str
    headers_encrypted: str
    payload: Any
    attempts: int  # this one included
    created_at: datetime


@dataclass(frozen=True)
class Attempt:
    """One delivery ready to go: its body and headers, or why it cannot be sent."""

    claimed: Claimed
    payload: Any
    body: str = ""
    headers: dict[str, str] | None = None
    refused: str = ""


@dataclass(frozen=True)
class Outcome:
    status_code: int | None = None
    excerpt: str = ""
    error: str = ""

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def message_id(delivery_id: uuid.UUID) -> str:
    """The `webhook-id` of every attempt of a delivery."""
    return f"msg_{delivery_id.hex}"


def deliveries_send_due(limit: int | None = None) -> int:
    """One pass: claim the deliveries due (at most `limit`, WEBHOOK_CONCURRENCY * 4 by
    default), attempt each, write the outcomes. Returns how many were attempted."""
    claimed = _claim(limit or int(settings.WEBHOOK_CONCURRENCY) * 4)
    if not claimed:
        return 0
    attempts = _prepared(claimed)
    workers = max(1, min(int(settings.WEBHOOK_CONCURRENCY), len(attempts)))
    with (
        httpx.Client(
            timeout=float(settings.WEBHOOK_TIMEOUT_SECONDS),
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        ) as client,
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="webhook") as pool,
    ):
        outcomes = list(pool.map(functools.partial(_send, client), attempts))
    for attempt, outcome in zip(attempts, outcomes, strict=True):
        _record(attempt, outcome)
    return len(claimed)


@functools.cache
def _claim_sql() -> str:
    table = connection.ops.quote_name(WebhookDelivery._meta.db_table)
    # The table's name from the model; every value is a parameter.
    return f"""
        UPDATE {table} d SET
            attempts = d.attempts + 1,
            last_attempt_at = statement_timestamp(),
            next_attempt_at = statement_timestamp() + make_interval(secs => %(lost)s)
        FROM (
            SELECT id FROM {table}
            WHERE status = %(pending)s AND next_attempt_at <= statement_timestamp()
            ORDER BY next_attempt_at
            LIMIT %(limit)s
            FOR UPDATE SKIP LOCKED
        ) due
        WHERE d.id = due.id
        RETURNING d.id, d.environment_id, d.run_id, d.event, d.format, d.url,
            d.headers_encrypted, d.payload::text, d.attempts, d.created_at
    """  # noqa: S608


def _claim(limit: int) -> list[Claimed]:
    # An attempt that outlives this was lost with its process: the delivery is due again.
    lost = float(settings.WEBHOOK_TIMEOUT_SECONDS) * 2 + 30
    with connection.cursor() as cursor:
        cursor.execute(
            _claim_sql(), {"lost": lost, "pending": DeliveryStatus.PENDING, "limit": limit}
        )
        rows = cursor.fetchall()
    return [
        Claimed(
            id=row[0],
            environment_id=row[1],
            run_id=row[2],
            event=row[3],
            format=row[4],
            url=row[5],
            headers_encrypted=row[6],
            payload=None if row[7] is None else json.loads(row[7]),
            attempts=row[8],
            created_at=row[9],
        )
        for row in rows
    ]


def _prepared(claimed: list[Claimed]) -> list[Attempt]:
    """Each delivery's payload (built from its run at its first attempt), body and signed
    headers. Database reads: before the attempts, in the pass's thread."""
    runs = Run.objects.in_bulk(
        [c.run_id for c in claimed if c.payload is None and c.run_id is not None]
    )
    secrets: dict[uuid.UUID, Webhook | str] = {}
    attempts = []
    for item in claimed:
        payload = item.payload
        if payload is None:
            run = runs.get(item.run_id) if item.run_id is not None else None
            if run is None:
                attempts.append(Attempt(item, None, refused="its run no longer exists"))
                continue
            payload = PAYLOADS.lookup(item.format)(run, item.event)
        signer = secrets.get(item.environment_id)
        if signer is None:
            signer = secrets[item.environment_id] = _signer(item.environment_id)
        try:
            extra = decrypt_headers(item.headers_encrypted)
        except HeadersUnreadable as exc:
            attempts.append(Attempt(item, payload, refused=str(exc)))
            continue
        if isinstance(signer, str):
            attempts.append(Attempt(item, payload, refused=signer))
            continue
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        attempts.append(Attempt(item, payload, body, _headers(item, body, signer, extra)))
    return attempts


def _signer(environment_id: uuid.UUID) -> Webhook | str:
    try:
        return Webhook(environment_secret(environment_id=environment_id))
    except HeadersUnreadable as exc:
        return f"the environment's webhook secret is unreadable: {exc}"


def _headers(item: Claimed, body: str, signer: Webhook, extra: dict[str, str]) -> dict[str, str]:
    now = datetime.now(UTC)
    msg_id = message_id(item.id)
    return {
        **extra,
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign(msg_id, now, body),
    }


def _send(client: httpx.Client, attempt: Attempt) -> Outcome:
    """One attempt, guarded as MCP connections are (DNS read now). No database here."""
    if attempt.refused:
        return Outcome(error=attempt.refused)
    try:
        check_url(attempt.claimed.url, policy_from_settings())
    except UrlRefused as exc:
        return Outcome(error=f"refused by the address guard: {exc}")
    try:
        answer = client.post(
            attempt.claimed.url, content=attempt.body.encode(), headers=attempt.headers
        )
    except httpx.HTTPError as exc:
        return Outcome(error=f"{type(exc).__name__}: {exc}"[:EXCERPT_CHARS])
    return Outcome(answer.status_code, answer.text[:EXCERPT_CHARS])


def backoff_seconds(attempts: int) -> float:
    """The wait after the `attempts`-th failed attempt: WEBHOOK_BACKOFF_SECONDS, doubled
    each time, at most WEBHOOK_BACKOFF_MAX_SECONDS."""
    return float(
        get_exponential_backoff_interval(
            factor=settings.WEBHOOK_BACKOFF_SECONDS,
            retries=max(0, attempts - 1),
            maximum=settings.WEBHOOK_BACKOFF_MAX_SECONDS,
        )
    )


@functools.cache
def _record_sql() -> str:
    table = connection.ops.quote_name(WebhookDelivery._meta.db_table)
    # In the database's clock (the statement's: a transaction's now() stands still), as
    # the claim; the table's name from the model.
    return f"""
        UPDATE {table} SET
            payload = %(payload)s::json,
            last_status_code = %(status_code)s,
            last_response = %(excerpt)s,
            last_error = %(error)s,
            history = history || %(entry)s::jsonb,
            status = CASE
                WHEN %(delivered)s THEN %(done)s
                WHEN created_at + make_interval(secs => %(window)s)
                    < statement_timestamp() + make_interval(secs => %(wait)s) THEN %(gave_up)s
                ELSE %(pending)s END,
            delivered_at = CASE WHEN %(delivered)s THEN statement_timestamp() END,
            next_attempt_at = CASE
                WHEN %(delivered)s THEN NULL
                WHEN created_at + make_interval(secs => %(window)s)
                    < statement_timestamp() + make_interval(secs => %(wait)s) THEN NULL
                ELSE statement_timestamp() + make_interval(secs => %(wait)s) END
        WHERE id = %(id)s AND status = %(pending)s
    """  # noqa: S608


def _record(attempt: Attempt, outcome: Outcome) -> None:
    item = attempt.claimed
    entry = {
        "at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "attempt": item.attempts,
        "statusCode": outcome.status_code,
        "error": outcome.error,
    }
    with connection.cursor() as cursor:
        cursor.execute(
            _record_sql(),
            {
                "id": item.id,
                "payload": None if attempt.payload is None else json.dumps(attempt.payload),
                "status_code": outcome.status_code,
                "excerpt": outcome.excerpt,
                "error": outcome.error,
                "entry": json.dumps([entry]),
                "delivered": outcome.delivered,
                "done": DeliveryStatus.DELIVERED,
                "gave_up": DeliveryStatus.FAILED,
                "pending": DeliveryStatus.PENDING,
                "window": float(settings.WEBHOOK_RETRY_SECONDS),
                "wait": backoff_seconds(item.attempts),
            },
        )
    if not outcome.delivered:
        logger.info(
            "webhook %s to %s: attempt %s failed (%s)",
            message_id(item.id),
            item.url,
            item.attempts,
            outcome.status_code or outcome.error,
        )
