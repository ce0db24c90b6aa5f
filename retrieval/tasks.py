"""Celery tasks: they translate a message into a service call, nothing more."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from agentbuilder import liveness
from retrieval.indexing import document_ingest
from retrieval.ingestion import INGEST_TASK, leased


@shared_task(bind=True, name=INGEST_TASK, acks_late=True)
def ingest_document(task: Any, document_id: str) -> str:
    if not task.request.called_directly:  # in a worker: renew its leases, sweep with the rest
        liveness.ensure_started()
    with leased(document_id):
        return str(document_ingest(document_id=document_id))
