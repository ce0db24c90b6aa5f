"""A document's chunks: extract ▸ split ▸ embed ▸ store, the work an ingestion does.

All-or-nothing: chunks are replaced in one transaction, and a failure leaves the document
`failed` with its reason and no chunks at all. Below what schedules it (retrieval.ingestion:
where and when) and the uploads that start it (retrieval.services), which import this
module, never the other way.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pgvector import Vector

from retrieval.bounded_extract import Limits, extract_pieces
from retrieval.chunking import Piece
from retrieval.embedders.base import Embedder, EmbeddingError
from retrieval.embedders.registry import embedder_for
from retrieval.extract import ExtractionError
from retrieval.models import Chunk, Document, DocumentStatus

logger = logging.getLogger(__name__)

EMBED_BATCH = 64


def document_embedder() -> Embedder:
    """The deployment's embedder (EMBEDDING_PROVIDER), for chunks and queries alike."""
    return embedder_for(
        settings.EMBEDDING_PROVIDER,
        dimension=settings.EMBEDDING_DIM,
        model=settings.EMBEDDING_MODEL,
        batch_size=EMBED_BATCH,
    )


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
