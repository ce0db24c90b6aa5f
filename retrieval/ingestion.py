"""Where and when documents are ingested: an upload is answered at once, and no document
is left `pending` by a process that died.

Where: with a broker (CELERY_BROKER_URL), in a Celery worker; without one, not through
Celery's eager mode (inside the request) but in
INGESTION_WORKERS threads of this process (0: in the caller, as in the tests, whose
uncommitted rows no other thread can see). Either way, after the upload commits.

Surviving its process: whoever will ingest a document, or is ingesting it, holds a lease
on it (agentbuilder.liveness). When the lease runs out, any live process queues the
document again, unless INGESTION_MAX_ATTEMPTS ingestions of it have started already:
then it is `failed`, with the reason. A document handed to the broker is leased for an
hour, the broker's to deliver; a message the broker lost is sent again after that.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Collection, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connections
from django.db.models import DateTimeField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Now

from agentbuilder import celery_app, liveness
from retrieval import indexing
from retrieval.models import Document, DocumentStatus

logger = logging.getLogger(__name__)

LEASES = "documents"
# The Celery task that ingests in a worker (retrieval.tasks), sent by its name: the task
# imports this module, which so never imports it back.
INGEST_TASK = "retrieval.ingest_document"
BROKER_LEASE = timedelta(hours=1)
RECOVER_BATCH = 100

_executor: ThreadPoolExecutor | None = None
_queued: set[Future[None]] = set()
_lock = threading.Lock()


def register() -> None:
    liveness.register(LEASES, renew=_renew, sweep=documents_recover)


def ingestion_queue(document_id: uuid.UUID) -> None:
    """Ingest a committed document where this deployment ingests."""
    if not celery_app.conf.task_always_eager:  # a broker: CELERY_BROKER_URL
        _send(document_id)
    elif settings.INGESTION_WORKERS <= 0:
        ingest(document_id)
    else:
        liveness.hold(LEASES, document_id)  # renewed while it waits for a thread
        future = _pool().submit(_ingest_in_thread, document_id)
        with _lock:
            _queued.add(future)
        future.add_done_callback(_forget)


def ingest(document_id: uuid.UUID | str) -> str:
    """Ingest the document now, in this thread: what the threads of the pool run."""
    with leased(document_id):
        return indexing.document_ingest(document_id=document_id)


@contextmanager
def leased(document_id: uuid.UUID | str) -> Iterator[None]:
    """One more ingestion of the document starts here, leased until it is done. The count
    that bounds retries counts those their process did not survive."""
    key = uuid.UUID(str(document_id))
    Document.objects.filter(pk=key).update(
        attempts=F("attempts") + 1, lease_until=liveness.lease_expiry()
    )
    liveness.hold(LEASES, key)
    try:
        yield
    finally:
        liveness.release(LEASES, key)


def ingestion_wait(timeout: float) -> bool:
    """Wait until this process's queued ingestions are done (tests, benchmarks, shutdown).
    False if some were still running after `timeout` seconds."""
    with _lock:
        queued = set(_queued)
    _, running = wait(queued, timeout=timeout)
    return not running


def documents_recover() -> int:
    """Queue again every pending document whose lease ran out (its process died); fail,
    with the reason, those that started INGESTION_MAX_ATTEMPTS ingestions already.
    Documents from before leases (no lease at all) count once a lease's length old."""
    lease = timedelta(seconds=liveness.lease_seconds())
    expired = Q(status=DocumentStatus.PENDING) & (
        Q(lease_until__lt=Now()) | Q(lease_until__isnull=True, created_at__lt=Now() - lease)
    )
    limit = settings.INGESTION_MAX_ATTEMPTS
    found = list(
        Document.objects.filter(expired)
        .order_by("created_at")
        .values_list("pk", "attempts")[:RECOVER_BATCH]
    )
    for pk, attempts in found:
        # Moving the lease first: of several processes sweeping, one takes the document.
        if not Document.objects.filter(expired, pk=pk).update(lease_until=liveness.lease_expiry()):
            continue
        if attempts >= limit:
            logger.warning("document %s: %s ingestions stopped with their process", pk, attempts)
            indexing.document_fail(
                document_id=pk,
                reason=f"ingestion did not finish: the process ingesting it stopped {attempts} "
                "times (killed, or out of memory)",
            )
        else:
            logger.warning("document %s: its ingestion stopped with its process; again", pk)
            ingestion_queue(pk)
    return len(found)


def _renew(document_ids: Collection[uuid.UUID]) -> None:
    Document.objects.filter(pk__in=document_ids, status=DocumentStatus.PENDING).update(
        lease_until=liveness.lease_expiry()
    )


def _send(document_id: uuid.UUID) -> None:
    broker_lease = ExpressionWrapper(Now() + Value(BROKER_LEASE), output_field=DateTimeField())
    Document.objects.filter(pk=document_id).update(lease_until=broker_lease)
    try:
        celery_app.send_task(INGEST_TASK, args=[str(document_id)])
    except Exception:
        # Not sent: a live process tries again once the usual lease runs out.
        Document.objects.filter(pk=document_id).update(lease_until=liveness.lease_expiry())
        raise


def _ingest_in_thread(document_id: uuid.UUID) -> None:
    try:
        ingest(document_id)
    except Exception:  # document_ingest records its own failures: this is the database
        logger.exception("ingestion of document %s stopped", document_id)
    finally:
        liveness.release(LEASES, document_id)
        for connection in connections.all(initialized_only=True):
            connection.close()  # back to the pool while the thread waits for work


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=settings.INGESTION_WORKERS, thread_name_prefix="ingest"
            )
        return _executor


def _forget(future: Future[None]) -> None:
    with _lock:
        _queued.discard(future)


def _forget_after_fork() -> None:
    # The parent's threads did not come along.
    global _executor, _lock
    _executor = None
    _lock = threading.Lock()
    _queued.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
