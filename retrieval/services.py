"""Documents in, chunks out: upload, ingestion (extract ▸ split ▸ embed ▸ store), delete.

Ingestion is idempotent and all-or-nothing: chunks are replaced in one transaction, and
a failure leaves the document `failed` with its reason and no chunks at all.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pgvector import Vector

from agentbuilder import liveness
from agentbuilder.errors import Conflict, DomainError, Invalid
from retrieval.bounded_extract import Limits, extract_pieces
from retrieval.chunking import Piece
from retrieval.embedders.base import Embedder, EmbeddingError
from retrieval.embedders.registry import embedder_for
from retrieval.extract import (
    ExtractionError,
    UnsupportedMedia,
    media_type_of,
    text_check,
)
from retrieval.models import Chunk, Document, DocumentStatus

logger = logging.getLogger(__name__)

EMBED_BATCH = 64


class UnsupportedMediaType(DomainError):
    status = 415


class TooLarge(DomainError):
    status = 413


class Unreadable(DomainError):
    status = 422


def document_embedder() -> Embedder:
    """The deployment's embedder (EMBEDDING_PROVIDER), for chunks and queries alike."""
    return embedder_for(
        settings.EMBEDDING_PROVIDER,
        dimension=settings.EMBEDDING_DIM,
        model=settings.EMBEDDING_MODEL,
        batch_size=EMBED_BATCH,
    )


def document_create(
    *,
    environment_id: Any,
    user: Any,
    title: str,
    data: bytes,
    media_type: str | None,
    source_name: str = "",
    doc_type: str = "",
    metadata: dict[str, Any] | None = None,
    idempotency_key: str = "",
) -> Document:
    """Store an upload as a pending document; ingestion starts once the transaction commits.
    With an `idempotency_key`, the caller's earlier upload under that key (even one being
    stored concurrently) is the answer, not a second document.

    Raises UnsupportedMediaType (415), TooLarge (413), Invalid, or Conflict (409) when the
    key was used for another upload.
    """
    resolved = _admitted(data, media_type, source_name)
    if not title.strip():
        raise Invalid.at(("body", "title"), "must not be empty")
    if idempotency_key:
        earlier = _keyed_upload(user, idempotency_key)
        if earlier is not None:
            return _same_upload(earlier, environment_id, title, data)
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
                created_by=user,
                idempotency_key=idempotency_key,
                # Until ingestion is queued: if this process dies first, another queues it.
                lease_until=liveness.lease_expiry(),
            )
    except IntegrityError:
        earlier = _keyed_upload(user, idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return _same_upload(earlier, environment_id, title, data)  # a concurrent twin won
    document_schedule(document_id=document.pk)
    return document


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


def _keyed_upload(user: Any, key: str) -> Document | None:
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
    from retrieval.ingestion import ingestion_queue

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


def document_ingest(*, document_id: uuid.UUID | str) -> DocumentStatus:
    """Extract, split, embed and store a document's chunks, replacing any earlier ones."""
    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        logger.info("document %s is gone; nothing to ingest", document_id)
        return DocumentStatus.FAILED
    try:
        pieces = extract_pieces(bytes(document.source), document.media_type, extraction_limits())
        if not pieces:  # an empty file, a scanned PDF without a text layer
            raise ExtractionError("the document has no text to index")
        vectors = list(_embed(document_embedder(), [p.text for p in pieces]))
        _store(document.pk, pieces, vectors)
    except (ExtractionError, EmbeddingError, ValueError) as exc:
        _fail(document.pk, str(exc) or type(exc).__name__)
        return DocumentStatus.FAILED
    except Exception as exc:  # never leave a document pending without a reason
        logger.exception("ingestion of document %s failed", document.pk)
        _fail(document.pk, f"ingestion failed: {type(exc).__name__}: {exc}")
        return DocumentStatus.FAILED
    return DocumentStatus.READY


def extraction_limits() -> Limits:
    """What reading one document may cost (the DOCUMENT_* settings)."""
    return Limits(
        decompressed_bytes=settings.DOCUMENT_MAX_DECOMPRESSED_BYTES,
        chunks=settings.DOCUMENT_MAX_CHUNKS,
        chunk_tokens=settings.CHUNK_TOKENS,
        chunk_overlap=settings.CHUNK_OVERLAP,
        cpu_seconds=settings.DOCUMENT_EXTRACTION_SECONDS,
        memory_bytes=settings.DOCUMENT_EXTRACTION_MEMORY_BYTES,
    )


def _embed(embedder: Embedder, texts: Sequence[str]) -> Iterator[list[float]]:
    for start in range(0, len(texts), EMBED_BATCH):
        yield from embedder.embed(list(texts[start : start + EMBED_BATCH]))


# Binary COPY: no statement for the planner and no vector as text (384 floats formatted in
# Python and parsed back by PostgreSQL cost more than the rest of the row).
CHUNK_COPY = (
    'COPY retrieval_chunk (document_id, position, text, token_count, start, "end", embedding)'
    " FROM STDIN WITH (FORMAT BINARY)"
)
# A binary COPY row carries no type tags, only each field's length and the bytes its column's
# receive function reads: the vector goes as pgvector's binary form, which psycopg passes on
# as is when told bytea, with no round trip to look up the vector type's oid.
CHUNK_COPY_TYPES = ["uuid", "int4", "text", "int4", "int4", "int4", "bytea"]


@transaction.atomic
def _store(document_id: uuid.UUID, pieces: list[Piece], vectors: list[list[float]]) -> None:
    # The row lock serialises two ingestions of one document: the second replaces the
    # first's chunks instead of colliding with them. The DELETE stays a statement of its
    # own, after the lock: one statement's snapshot would predate the wait, and miss the
    # chunks the first ingestion committed meanwhile.
    if not Document.objects.select_for_update().filter(pk=document_id).exists():
        return
    with connection.cursor() as cursor:
        # Only this commit skips waiting for its WAL flush. A PostgreSQL crash in the next
        # fraction of a second can lose the whole transaction, never part of it: the
        # document is `pending` again, its lease runs out and it is ingested again.
        cursor.execute("SET LOCAL synchronous_commit = off")
    Chunk.objects.filter(document_id=document_id).delete()
    _copy_chunks(document_id, pieces, vectors)
    Document.objects.filter(pk=document_id).update(
        status=DocumentStatus.READY,
        error="",
        ingested_at=timezone.now(),
        chunk_count=len(pieces),
        lease_until=None,
    )


def _copy_chunks(document_id: uuid.UUID, pieces: list[Piece], vectors: list[list[float]]) -> None:
    # Raising inside the block aborts the COPY: the rows already sent are not kept.
    with (
        connection.wrap_database_errors,  # django.db's exceptions, as the ORM raises them
        connection.cursor() as cursor,
        cursor.cursor.copy(CHUNK_COPY) as copy,
    ):
        copy.set_types(CHUNK_COPY_TYPES)
        for piece, vector in zip(pieces, vectors, strict=True):
            copy.write_row(
                (
                    document_id,
                    piece.position,
                    piece.text,
                    piece.token_count,
                    piece.start,
                    piece.end,
                    Vector(vector).to_binary(),
                )
            )


def document_fail(*, document_id: uuid.UUID, reason: str) -> None:
    """Give up on a document: `failed` with the reason, and no chunks."""
    _fail(document_id, reason)


@transaction.atomic
def _fail(document_id: uuid.UUID, reason: str) -> None:
    Chunk.objects.filter(document_id=document_id).delete()
    Document.objects.filter(pk=document_id).update(
        status=DocumentStatus.FAILED, error=reason[:2000], chunk_count=0, lease_until=None
    )
