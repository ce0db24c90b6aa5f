"""Celery tasks: they translate a message into a service call, nothing more."""

from __future__ import annotations

from celery import shared_task

from retrieval.services import document_ingest


@shared_task(name="retrieval.ingest_document", acks_late=True)
def ingest_document(document_id: str) -> str:
    return str(document_ingest(document_id=document_id))
