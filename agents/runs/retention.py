"""Retention (RUN_RETENTION_DAYS, docs/architecture.md#retention): runs that ended more than
that many days ago are deleted with what hangs on them, and webhook deliveries as old; daily
by beat (agents.tasks.runs_prune) and by `manage.py prune`.

Kept whatever their age: a run not ended (queued, in progress, awaiting approval), a run
with feedback (a person judged it: the data a dataset is made from), and the audit log
(append-only). An experiment keeps its results, whose answer, tool calls, scores, latency
and cost are copied on the result; only their link to the run's timeline goes, as a
dataset case made from a run keeps its input and loses its `source_run`.

Deleted in batches of `batch` runs, each its own short transaction: the batch's runs are
locked `FOR UPDATE SKIP LOCKED` (a run some request holds is left for the next day), then
their children go, then they do. No statement locks more than the batch's rows, so an
invoke never waits on the prune for a table. Batches walk the `started_at` index (a run
ends after it started, so one that started after the cut-off has not ended before it),
each after the last one's key: kept runs are read once a pass, not once a batch.

Django's `on_delete` is Python's, not the database's: the constraints are NO ACTION, so
every table that points at runs is named here, and tests/agents/runs/test_retention.py
checks the list against the database's constraints.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from agents.models import (
    RUN_ENDED,
    ApprovalRequest,
    DatasetCase,
    DeliveryStatus,
    ExperimentResult,
    PushConfig,
    Run,
    RunEvent,
    RunFeedback,
    WebhookDelivery,
)

logger = logging.getLogger(__name__)

TASK = "agents.runs.prune"
BATCH = 2000

# Tables that point at runs: (model, column) deleted with the run, cleared, or keeping it.
DELETED_WITH_RUN: tuple[tuple[type[Model], str], ...] = (
    (RunEvent, "run_id"),
    (ApprovalRequest, "run_id"),
    (WebhookDelivery, "run_id"),
    (PushConfig, "run_id"),
)
CLEARED: tuple[tuple[type[Model], str], ...] = (
    (ExperimentResult, "run_id"),
    (DatasetCase, "source_run_id"),
)
KEEPS_RUN: tuple[tuple[type[Model], str], ...] = ((RunFeedback, "run_id"),)

_FIRST_KEY = (datetime.min.replace(tzinfo=UTC), uuid.UUID(int=0))


@dataclass
class PruneReport:
    """What a prune removed, or with `dry_run`, would remove."""

    cutoff: datetime
    dry_run: bool = False
    runs: int = 0
    events: int = 0
    approval_requests: int = 0
    push_configs: int = 0
    deliveries: int = 0
    experiment_results_unlinked: int = 0
    dataset_cases_unlinked: int = 0
    batches: int = 0  # transactions that deleted something

    def counts(self) -> dict[str, int]:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("cutoff", "dry_run", "batches")
        }


def runs_prune(*, days: int, dry_run: bool = False, batch: int = BATCH) -> PruneReport:
    """Delete the runs that ended more than `days` days ago (but those kept, above) with
    their events, approvals, push configs and deliveries, and every other webhook delivery
    made before then that is not pending; with `dry_run`, count them. Raises ValueError
    for `days` < 1 (0 means keep forever: the caller does not prune)."""
    if days < 1:
        raise ValueError("days must be 1 or more")
    report = PruneReport(cutoff=timezone.now() - timedelta(days=days), dry_run=dry_run)
    if dry_run:
        _count(report)
        return report
    key = _FIRST_KEY
    while True:
        with transaction.atomic():
            found, key = _runs_batch(report, key, batch)
        if found < batch:
            break
    after = uuid.UUID(int=0)
    while True:
        with transaction.atomic():
            found, after = _deliveries_batch(report, after, batch)
        if found < batch:
            break
    logger.info("pruned what ended before %s: %s", report.cutoff.isoformat(), report.counts())
    return report


def _t(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _due_runs_sql() -> str:
    """The runs due, as `r`, with the cut-off as %(cutoff)s."""
    ended = ", ".join(f"'{status.value}'" for status in sorted(RUN_ENDED))
    keeps = " AND ".join(
        f"NOT EXISTS (SELECT 1 FROM {_t(m)} k WHERE k.{column} = r.id)"  # noqa: S608
        for m, column in KEEPS_RUN
    )
    return (
        f"r.started_at < %(cutoff)s AND r.status IN ({ended})"
        f" AND COALESCE(r.completed_at, r.started_at) < %(cutoff)s AND {keeps}"
    )


def _runs_batch(
    report: PruneReport, key: tuple[datetime, uuid.UUID], batch: int
) -> tuple[int, tuple[datetime, uuid.UUID]]:
    runs = _t(Run)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.id, r.started_at FROM {runs} r WHERE {_due_runs_sql()}"  # noqa: S608
            " AND r.started_at >= %(at)s AND (r.started_at, r.id) > (%(at)s, %(id)s)"
            " ORDER BY r.started_at, r.id LIMIT %(batch)s FOR UPDATE OF r SKIP LOCKED",
            {"cutoff": report.cutoff, "at": key[0], "id": key[1], "batch": batch},
        )
        rows = cursor.fetchall()
        if not rows:
            return 0, key
        # Locked now, so no feedback can be added to them; one added before the lock, after
        # the statement's snapshot, shows in this new statement's.
        cursor.execute(
            f"SELECT r.id FROM {runs} r WHERE r.id = ANY(%(ids)s) AND {_due_runs_sql()}",  # noqa: S608
            {"ids": [row[0] for row in rows], "cutoff": report.cutoff},
        )
        ids = [row[0] for row in cursor.fetchall()]
        if ids:
            _delete_runs(cursor, report, ids)
            report.batches += 1
    return len(rows), (rows[-1][1], rows[-1][0])


def _delete_runs(cursor: Any, report: PruneReport, ids: list[uuid.UUID]) -> None:
    deliveries, configs = _t(WebhookDelivery), _t(PushConfig)
    p = {"ids": ids}

    def run(sql: str) -> int:
        cursor.execute(sql, p)
        return int(cursor.rowcount)

    report.events += run(f"DELETE FROM {_t(RunEvent)} WHERE run_id = ANY(%(ids)s)")  # noqa: S608
    report.approval_requests += run(
        f"DELETE FROM {_t(ApprovalRequest)} WHERE run_id = ANY(%(ids)s)"  # noqa: S608
    )
    report.deliveries += run(f"DELETE FROM {deliveries} WHERE run_id = ANY(%(ids)s)")  # noqa: S608
    # A delivery of another run made for these runs' push configs keeps its row (SET_NULL).
    run(
        f"UPDATE {deliveries} SET push_config_id = NULL WHERE push_config_id IN"  # noqa: S608
        f" (SELECT id FROM {configs} WHERE run_id = ANY(%(ids)s))"
    )
    report.push_configs += run(f"DELETE FROM {configs} WHERE run_id = ANY(%(ids)s)")  # noqa: S608
    report.experiment_results_unlinked += run(
        f"UPDATE {_t(ExperimentResult)} SET run_id = NULL WHERE run_id = ANY(%(ids)s)"  # noqa: S608
    )
    report.dataset_cases_unlinked += run(
        f"UPDATE {_t(DatasetCase)} SET source_run_id = NULL"  # noqa: S608
        " WHERE source_run_id = ANY(%(ids)s)"
    )
    report.runs += run(f"DELETE FROM {_t(Run)} WHERE id = ANY(%(ids)s)")  # noqa: S608


def _old_deliveries_sql() -> str:
    # A pending one is still being retried (or is a bug to look at): never pruned.
    return f"d.created_at < %(cutoff)s AND d.status <> '{DeliveryStatus.PENDING.value}'"


def _deliveries_batch(report: PruneReport, after: uuid.UUID, batch: int) -> tuple[int, uuid.UUID]:
    """The deliveries of kept runs, and those of no run, made before the cut-off: by primary
    key, after the last batch's (the table has no index on `created_at`)."""
    table = _t(WebhookDelivery)
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {table} WHERE id IN (SELECT d.id FROM {table} d"  # noqa: S608
            f" WHERE d.id > %(after)s AND {_old_deliveries_sql()}"
            " ORDER BY d.id LIMIT %(batch)s FOR UPDATE SKIP LOCKED) RETURNING id",
            {"after": after, "cutoff": report.cutoff, "batch": batch},
        )
        ids = [row[0] for row in cursor.fetchall()]
    if not ids:
        return 0, after
    report.deliveries += len(ids)
    report.batches += 1
    return len(ids), max(ids)


def _count(report: PruneReport) -> None:
    def of(model: type[Model], column: str) -> str:
        return f"(SELECT count(*) FROM {_t(model)} WHERE {column} IN (SELECT id FROM due))"  # noqa: S608

    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH due AS (SELECT r.id FROM {_t(Run)} r WHERE {_due_runs_sql()})"  # noqa: S608
            " SELECT (SELECT count(*) FROM due),"
            f" {of(RunEvent, 'run_id')}, {of(ApprovalRequest, 'run_id')},"
            f" {of(PushConfig, 'run_id')}, {of(ExperimentResult, 'run_id')},"
            f" {of(DatasetCase, 'source_run_id')},"
            f" (SELECT count(*) FROM {_t(WebhookDelivery)} d WHERE d.run_id IN"
            f" (SELECT id FROM due) OR ({_old_deliveries_sql()}))",
            {"cutoff": report.cutoff},
        )
        row = cursor.fetchone()
    (
        report.runs,
        report.events,
        report.approval_requests,
        report.push_configs,
        report.experiment_results_unlinked,
        report.dataset_cases_unlinked,
        report.deliveries,
    ) = row
