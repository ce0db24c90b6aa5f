"""Background runs (docs/api.md#background-runs): a call that answers 202 at once with its
run `queued`, which a worker then takes, runs and records as any run.

- **Queue.** `run_queue` checks the call as a streamed one is checked (the same refusals,
  before anything is queued), inserts the run `queued` with its request on its row, and
  hands it over: to a Celery worker through the broker when CELERY_BROKER_URL is set
  (agents.tasks), else to this process's runner (agents.runs.detached), which stands in for
  the workers in the embedded mode.
- **Claim.** Whoever takes the run first claims it (`queued` → `in_progress`, leased by its
  process from then on, as every live run); a second delivery of its message finds it
  claimed and does nothing, so handing a run over twice is always safe.
- **Lease of the queue.** A queued run holds no process, but its message may be lost (a
  broker restarted without persistence, a worker killed between taking the message and
  claiming the run, the embedded server stopped). The queue's sweep, in every live
  process, hands over again each queued run unclaimed after RUN_QUEUE_LEASE_SECONDS, and
  fails `not_started` one still unclaimed after RUN_QUEUE_TIMEOUT_SECONDS: a queued run is
  run or closed, never left.
- **After the claim** a run is like any other: a killed worker's run is closed `failed`
  (`interrupted`) by the lease sweep and not run again, since its tools may have acted.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from concurrent.futures import Future
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models.functions import Now

from agentbuilder import liveness
from agentbuilder.db import columns_sql, one_row
from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User
from agents.models import Agent, AgentVersion, Environment, Run, RunStatus
from agents.runs import detached, leases
from agents.runs.approvals import run_cancel_waiting
from agents.runs.live import run_cancel
from agents.runs.request import RunRequest, request_from_json
from agents.runs.start import Invocation, invocation_claimed, invocation_queue, queue_lease_expiry
from agents.runtime.failures import FailureCode
from agents.runtime.tracecontext import RunTrace

logger = logging.getLogger(__name__)

TASK = "agents.run_queued"
QUEUE = "queued-runs"
NOT_STARTED = {
    "code": FailureCode.NOT_STARTED.value,
    "message": "no worker took this background run within RUN_QUEUE_TIMEOUT_SECONDS",
}
ORPHANED = {
    "code": FailureCode.INVALID_REQUEST.value,
    "message": "the run's caller was deleted before it started",
}
# A sweep hands over at most so many runs a pass: a lost queue of thousands comes back over
# a few passes rather than in one burst of messages.
REQUEUE_BATCH = 500


def register() -> None:
    liveness.register(QUEUE, renew=lambda held: None, sweep=queue_sweep)


def run_queue(request: RunRequest) -> uuid.UUID:
    """Check the call (raising as `invocation_start` does), queue its run and hand it to a
    worker. The run's id; the run is `queued` and nothing of it has run."""
    run_id = invocation_queue(request)
    hand_over(run_id)
    return run_id


def hand_over(run_id: uuid.UUID) -> None:
    """Send the run to a worker, or to this process's runner without a broker. A broker that
    cannot take it now leaves it to the queue's sweep."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        detached.runner().submit(run_id, lambda: run_claim(run_id))
        return
    try:
        current_app.send_task(TASK, args=[str(run_id)])
    except Exception:
        logger.warning("run %s: the broker refused it; the queue's sweep retries", run_id)


def run_here(run_id: uuid.UUID) -> Future[None]:
    """A worker's part (agents.tasks): claim the run and run it to its end in this process's
    runner; done when it is over."""
    return detached.runner().submit(run_id, lambda: run_claim(run_id))


def run_claim(run_id: uuid.UUID) -> Invocation | None:
    """Take the queued run for this process: `in_progress` from now, its `started_at` now,
    its invocation built from the request it kept. None when there is nothing to run:
    another process took it, or it was canceled or closed while it waited."""
    params = {
        "id": run_id,
        "queued": RunStatus.QUEUED.value,
        "running": RunStatus.IN_PROGRESS.value,
        "lease": timedelta(seconds=liveness.lease_seconds()),
    }
    found = one_row(_claim_sql(), params, Run, ("u__", get_user_model()), ("e__", Environment))
    if found is None:
        return None
    run, caller, environment = found
    # Django has psycopg read jsonb as text, which its JSONField decodes; this is no field.
    kept, number = run.kept_request, run.version_number
    kept = json.loads(kept) if isinstance(kept, str) else kept
    if caller is None or kept is None:  # its caller was deleted while it waited
        leases.runs_close(Run.objects.filter(pk=run_id), RunStatus.FAILED, ORPHANED)
        return None
    run.caller = caller
    request = request_from_json(
        kept,
        user=caller,
        environment=environment,
        agent_id=run.agent_id,
        version_ref=str(number),  # the version it resolved when queued
    )
    trace = RunTrace.from_json(kept["trace"]) if "trace" in kept else None
    try:
        return invocation_claimed(run, request, trace)
    except (DomainError, Invalid) as exc:  # the run is failed with the reason
        logger.info("run %s could not start: %s", run_id, exc)
        return None


@functools.cache
def _claim_sql() -> str:
    """The claim in one statement: the run, if still queued and locked by no one else, set
    `in_progress` and leased here, with the request it kept (cleared on the row), its
    version's number, its caller and its environment. The ORM's form (a locking select
    with its relations, then an update, in a transaction) cost more of the worker's CPU
    than all the rest of a quick run's start (py-spy, bench/run_events_follow.py)."""
    quote = connection.ops.quote_name
    runs, versions = quote(Run._meta.db_table), quote(AgentVersion._meta.db_table)
    agents, environments = quote(Agent._meta.db_table), quote(Environment._meta.db_table)
    users = quote(get_user_model()._meta.db_table)
    # Names from the models' metadata; every value is a parameter.
    return f"""
        WITH claimed AS (
            UPDATE {runs} r
            SET status = %(running)s, started_at = STATEMENT_TIMESTAMP(),
                lease_until = STATEMENT_TIMESTAMP() + %(lease)s, request = NULL
            FROM (
                SELECT q.id, q.request FROM {runs} q
                WHERE q.id = %(id)s AND q.status = %(queued)s
                FOR UPDATE SKIP LOCKED
            ) kept
            WHERE r.id = kept.id
            RETURNING {columns_sql(Run, "r")}, kept.request AS kept_request
        )
        SELECT c.*, v.number AS version_number,
            {columns_sql(get_user_model(), "u", "u__")},
            {columns_sql(Environment, "e", "e__")}
        FROM claimed c
        JOIN {versions} v ON v.id = c.version_id
        JOIN {agents} a ON a.id = c.agent_id
        JOIN {environments} e ON e.id = a.environment_id
        LEFT JOIN {users} u ON u.id = c.caller_id
    """  # noqa: S608


def run_stop(*, run_id: uuid.UUID, by: User) -> bool:
    """Cancel the run wherever it is: closed `canceled` at once while it waits for a worker
    or for approvals, asked to stop where it runs once taken (agents.runs.live). False if
    it has ended."""
    if run_cancel_queued(run_id):
        logger.info("run %s: canceled by %s before it started", run_id, by)
        return True
    if run_cancel_waiting(run_id):  # held by no process: closed here
        logger.info("run %s: canceled by %s while it waited for approvals", run_id, by)
        return True
    return run_cancel(run_id=run_id, by=by)


def run_cancel_queued(run_id: uuid.UUID) -> bool:
    """Close a run still waiting for a worker `canceled`: nothing of it ran, and no worker
    will take it. False if it is not queued (taken since, or ended)."""
    closed = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELED,
        completed_at=Now(),
        latency_ms=0,
        request=None,
        lease_until=None,
    )
    return bool(closed)


def queue_sweep() -> None:
    """Fail the queued runs no worker took in time; hand over again those whose message may
    be lost."""
    timeout = timedelta(seconds=float(settings.RUN_QUEUE_TIMEOUT_SECONDS))
    stale = Run.objects.filter(status=RunStatus.QUEUED, queued_at__lt=Now() - timeout)
    failed = stale.update(
        status=RunStatus.FAILED,
        completed_at=Now(),
        latency_ms=0,
        error=NOT_STARTED,
        request=None,
        lease_until=None,
    )
    if failed:
        logger.warning("%s background run(s) no worker took: failed (not_started)", failed)
    with transaction.atomic():
        # Locked and skipped: two processes sweeping at once hand over different runs.
        lapsed = list(
            Run.objects.select_for_update(skip_locked=True)
            .filter(status=RunStatus.QUEUED, lease_until__lt=Now())
            .order_by("queued_at")
            .values_list("pk", flat=True)[:REQUEUE_BATCH]
        )
        if lapsed:
            Run.objects.filter(pk__in=lapsed).update(lease_until=queue_lease_expiry())
    for run_id in lapsed:
        hand_over(run_id)
    if lapsed:
        logger.info("%s queued run(s) unclaimed past their lease: handed over again", len(lapsed))
