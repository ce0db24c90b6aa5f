"""No run is left `in_progress` (docs/api.md#run-status): whatever stops it, something closes it.

- The stream ends, the client leaves, anything breaks: `recorded_events` records it.
- The stream never starts (the client left before the first byte, while the view was
  still opening the run or before the server iterated the response): the run is
  `canceled` as soon as its Invocation is dropped, or at the latest once a lease's length
  has passed without its stream starting.
- Its process dies, or the task consuming it dies or hangs while the process lives: its
  lease is no longer renewed (a started run's only while its consumer beats,
  agents.runs.live), and any live process marks it `failed` (`interrupted`).
- And an admin can mark stuck runs failed by hand.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Now

from agentbuilder import liveness
from agentbuilder.users import User
from agents.models import Run, RunStatus
from agents.runs import live
from agents.runtime.failures import FailureCode

logger = logging.getLogger(__name__)

LEASES = "runs"
INTERRUPTED = {
    "code": FailureCode.INTERRUPTED.value,
    "message": "the server process running this run stopped before it finished",
}
# In the database's clock, as the leases are.
ELAPSED_MS = RawSQL(
    "GREATEST(0, EXTRACT(EPOCH FROM (STATEMENT_TIMESTAMP() - started_at)) * 1000)::integer", ()
)


@dataclass
class _Opened:
    at: float  # time.monotonic()
    started: bool = False


_preparing: set[uuid.UUID] = set()
_opened: dict[uuid.UUID, _Opened] = {}
_lock = threading.Lock()
_dropped: queue.SimpleQueue[uuid.UUID] = queue.SimpleQueue()


def register() -> None:
    liveness.register(LEASES, renew=_renew, sweep=runs_sweep)


def run_inserted(run_id: uuid.UUID) -> None:
    """The run's row exists and this thread prepares it (its spec, its inputs): renew its
    lease meanwhile. That is this thread's own bounded work, but a cold process on a
    loaded machine can spend longer than a lease on it (first imports, first
    connections): 5 of 20 runs of a busy test server were swept `interrupted` before their
    invocation existed. Ends with `run_opened`, or `run_ended` if preparing fails."""
    with _lock:
        _preparing.add(run_id)
    liveness.hold(LEASES, run_id)


def run_opened(run_id: uuid.UUID, invocation: object) -> None:
    """`invocation` carries the run to a stream: lease it until then."""
    with _lock:
        _preparing.discard(run_id)
        _opened[run_id] = _Opened(time.monotonic())
    liveness.hold(LEASES, run_id)
    weakref.finalize(invocation, _on_dropped, run_id)


def run_started(run_id: uuid.UUID) -> None:
    """Its stream began: from here on, the stream records how the run ends."""
    with _lock:
        opened = _opened.get(run_id)
        if opened is not None:
            opened.started = True


def run_ended(run_id: uuid.UUID) -> None:
    with _lock:
        _preparing.discard(run_id)
        _opened.pop(run_id, None)
    liveness.release(LEASES, run_id)


def _on_dropped(run_id: uuid.UUID) -> None:
    # A finalizer may run in any thread, inside any lock: no lock here, a dict read and
    # queue puts only. Every invocation is dropped, most after their stream began or
    # ended: only those whose stream never started wake the sweep (once per request
    # would be a pass of UPDATEs per call).
    opened = _opened.get(run_id)
    if opened is None or opened.started:
        return
    _dropped.put(run_id)
    liveness.wake()


def _renew(run_ids: Collection[uuid.UUID]) -> None:
    """Renew the runs being prepared or waiting for their stream to start, and the started
    ones whose consumer beat lately (agents.runs.live): not every run this process holds."""
    with _lock:
        unstarted = {r for r in run_ids if (o := _opened.get(r)) is not None and not o.started}
        unstarted |= _preparing.intersection(run_ids)
    alive = unstarted | live.beating(run_ids)
    if alive:
        Run.objects.filter(pk__in=alive, status=RunStatus.IN_PROGRESS).update(
            lease_until=liveness.lease_expiry()
        )


def runs_sweep() -> None:
    """Cancel this process's runs whose stream will never start, then fail every run whose
    process died."""
    runs_cancel_unstarted()
    runs_interrupt_expired()


def runs_cancel_unstarted() -> int:
    dropped = set()
    while True:
        try:
            dropped.add(_dropped.get_nowait())
        except queue.Empty:
            break
    deadline = time.monotonic() - liveness.lease_seconds()
    with _lock:
        unstarted = [
            run_id
            for run_id, opened in _opened.items()
            if not opened.started and (run_id in dropped or opened.at < deadline)
        ]
        for run_id in unstarted:
            del _opened[run_id]
    for run_id in unstarted:
        liveness.release(LEASES, run_id)
    if not unstarted:
        return 0
    closed = runs_close(Run.objects.filter(pk__in=unstarted), RunStatus.CANCELED)
    logger.info("%s run(s) whose client left before their stream began: canceled", closed)
    return closed


def runs_interrupt_expired() -> int:
    """Mark `failed` (`interrupted`) every in-progress run whose lease ran out; runs from
    before leases (no lease at all) once they are a lease's length old."""
    lease = timedelta(seconds=liveness.lease_seconds())
    expired = Q(lease_until__lt=Now()) | Q(lease_until__isnull=True, started_at__lt=Now() - lease)
    closed = runs_close(Run.objects.filter(expired), RunStatus.FAILED, INTERRUPTED)
    if closed:
        logger.warning("%s run(s) whose process stopped: failed (interrupted)", closed)
    return closed


def run_close_canceled(run_id: uuid.UUID) -> int:
    """A run canceled before anything ran it (queued for the detached runner)."""
    run_ended(run_id)
    return runs_close(Run.objects.filter(pk=run_id), RunStatus.CANCELED)


def runs_mark_failed(*, runs: QuerySet[Run], by: User) -> int:
    """An admin's verdict on runs they judge stuck: the in-progress ones become `failed`
    (`interrupted`). If such a run was alive after all, its own end overwrites this."""
    message = f"marked failed by {by} while in progress"
    return runs_close(runs, RunStatus.FAILED, {**INTERRUPTED, "message": message})


def runs_close(runs: QuerySet[Run], status: str, error: dict[str, str] | None = None) -> int:
    return runs.filter(status=RunStatus.IN_PROGRESS).update(
        status=status, completed_at=Now(), latency_ms=ELAPSED_MS, error=error, lease_until=None
    )
