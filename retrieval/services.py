"""Documents in and out: upload, re-ingest, describe, delete.

An upload is stored `pending` and its ingestion queued once the transaction commits
(retrieval.ingestion); the ingestion itself (extract ▸ split ▸ embed ▸ store) is
retrieval.indexing's.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agentbuilder import liveness
from agentbuilder.errors import Conflict, DomainError, Invalid
from agentbuilder.users import User
from retrieval.extract import (
    ExtractionError,
    UnsupportedMedia,
    media_type_of,
    text_check,
)
from retrieval.ingestion import ingestion_queue
from retrieval.models import Document, DocumentStatus


class UnsupportedMediaType(DomainError):
    status = 415


class TooLarge(DomainError):
    status = 413


class Unreadable(DomainError):
    status = 422


@dataclass(frozen=True)
class Upload:
    document: Document
    # True when the environment held these bytes already: `document` is that document.
    existing: bool = False


def document_create(**upload: Any) -> Document:
    """document_upload's document, for callers that need not know whether it is new."""
    return document_upload(**upload).document


def document_upload(
    *,
    environment_id: Any,
    user: User,
    title: str,
    data: bytes,
    media_type: str | None,
    source_name: str = "",
    doc_type: str = "",
    metadata: dict[str, Any] | None = None,
    idempotency_key: str = "",
) -> Upload:
    """Store an upload as a pending document; ingestion starts once the transaction commits.
    With an `idempotency_key`, the caller's earlier upload under that key (even one being
    stored concurrently) is the answer, not a second document. Bytes the environment holds
    already are that document (`existing`), whatever the title: its title and metadata
    stay, and a copy of a `failed` one is ingested again.

    Raises UnsupportedMediaType (415), TooLarge (413), Invalid, or Conflict (409) when the
    key was used for another upload.
    """
    resolved = _admitted(data, media_type, source_name)
    if not title.strip():
        raise Invalid.at(("body", "title"), "must not be empty")
    if idempotency_key:
        earlier = _keyed_upload(user, idempotency_key)
        if earlier is not None:
            return Upload(_same_upload(earlier, environment_id, title, data))
    content_hash = hashlib.sha256(data).hexdigest()
    same = _same_content(environment_id, content_hash)
    if same is not None:
        return same
    try:
        with transaction.atomic():
            document = Document.objects.create(
                environment_id=environment_id,
                title=title,
                doc_type=doc_type,
                metadata=metadata or {},
                source_name=source_name,
                media_type=resolved,
                source=data,
                content_hash=content_hash,
                created_by=user,
                idempotency_key=idempotency_key,
                # Until ingestion is queued: if this process dies first, another queues it.
                lease_until=liveness.lease_expiry(),
            )
    except IntegrityError:
        # A concurrent twin won: under the same key, or with the same bytes.
        earlier = _keyed_upload(user, idempotency_key) if idempotency_key else None
        if earlier is not None:
            return Upload(_same_upload(earlier, environment_id, title, data))
        same = _same_content(environment_id, content_hash)
        if same is None:
            raise
        return same
    document_schedule(document_id=document.pk)
    return Upload(document)


def _same_content(environment_id: Any, content_hash: str) -> Upload | None:
    document = Document.objects.filter(
        environment_id=environment_id, content_hash=content_hash
    ).first()
    if document is None:
        return None
    if document.status == DocumentStatus.FAILED:
        # Uploading it again is how a person retries; the bytes are the same, the cause
        # (a provider's outage, a limit since raised) may be gone.
        document_reingest(document=document)
        document.status = DocumentStatus.PENDING
    return Upload(document, existing=True)


def document_check(*, data: bytes, media_type: str | None, source_name: str = "") -> str:
    """The checks document_create makes of an upload's bytes, and also whether a text is
    in an encoding ingestion can read: cheap, unlike extraction, so a form can refuse it at
    once (a PDF is read only when ingested). Returns the media type it will be stored as.

    Raises TooLarge, UnsupportedMediaType, Unreadable.
    """
    resolved = _admitted(data, media_type, source_name)
    try:
        text_check(data, resolved)
    except ExtractionError as exc:
        raise Unreadable(str(exc)) from None
    return resolved


def _admitted(data: bytes, media_type: str | None, source_name: str) -> str:
    if len(data) > settings.DOCUMENT_MAX_BYTES:
        raise TooLarge(f"Documents are limited to {settings.DOCUMENT_MAX_BYTES} bytes.")
    try:
        return media_type_of(source_name or None, media_type)
    except UnsupportedMedia as exc:
        raise UnsupportedMediaType(f'Unsupported media type "{exc}".') from None


def _keyed_upload(user: User, key: str) -> Document | None:
    return Document.objects.filter(created_by=user, idempotency_key=key).first()


def _same_upload(document: Document, environment_id: Any, title: str, data: bytes) -> Document:
    if (
        str(document.environment_id) != str(environment_id)
        or document.title != title
        or bytes(document.source) != data
    ):
        raise Conflict("This Idempotency-Key was used for another upload.")
    return document


def document_schedule(*, document_id: uuid.UUID) -> None:
    """Queue ingestion after commit: a worker must find the row it is told about."""
    transaction.on_commit(lambda: ingestion_queue(document_id))


def document_reingest(*, document: Document) -> None:
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.PENDING, error="", attempts=0, lease_until=liveness.lease_expiry()
    )
    document_schedule(document_id=document.pk)


def document_update(*, document: Document, title: str, doc_type: str, metadata: Any) -> Document:
    """Change what describes a document; its chunks stay, as HxQL reads these fields from
    the document. Only these columns are written: a concurrent ingestion's status stands.

    Raises Invalid.
    """
    if not title.strip():
        raise Invalid.at(("body", "title"), "must not be empty")
    if not isinstance(metadata, dict):
        raise Invalid.at(("body", "metadata"), "must be a JSON object")
    Document.objects.filter(pk=document.pk).update(
        title=title, doc_type=doc_type, metadata=metadata
    )
    document.title, document.doc_type, document.metadata = title, doc_type, metadata
    return document


def document_delete(*, document: Document) -> None:
    """Delete a document and (by cascade) its chunks."""
    document.delete()
