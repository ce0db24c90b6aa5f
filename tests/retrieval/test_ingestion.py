"""Ingestion (extract ▸ split ▸ embed ▸ store) through the service and its Celery task:
ready with well-formed chunks, idempotent, and all-or-nothing when anything fails."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import DataError, connection
from django.test.utils import CaptureQueriesContext

from retrieval import indexing
from retrieval.chunking import count_tokens, split
from retrieval.embedders.base import EmbeddingError
from retrieval.indexing import document_embedder, document_ingest
from retrieval.models import Chunk, Document, DocumentStatus
from retrieval.services import document_create, document_delete, document_reingest
from retrieval.tasks import ingest_document
from tests.retrieval.pdfs import make_pdf

pytestmark = pytest.mark.django_db

SENTENCES = [
    f"Sentence number {n} talks about topic {n} and nothing else at all." for n in range(1, 13)
]
TEXT = " ".join(SENTENCES)


@pytest.fixture
def small_chunks(settings: Any) -> None:
    settings.CHUNK_TOKENS = 40
    settings.CHUNK_OVERLAP = 8


def snapshot(document: Document) -> list[tuple[int, str, int, int, int, list[float]]]:
    return [
        (c.position, c.text, c.token_count, c.start, c.end, [round(x, 6) for x in c.embedding])
        for c in Chunk.objects.filter(document=document).order_by("position")
    ]


def test_text_document_becomes_ready_with_ordered_embedded_chunks(
    add_document, small_chunks, settings
):
    document = add_document(TEXT, title="Topics")

    assert (document.status, document.error) == (DocumentStatus.READY, "")
    assert document.ingested_at is not None
    chunks = list(document.chunks.order_by("position"))
    assert len(chunks) > 3
    assert [c.position for c in chunks] == list(range(len(chunks)))
    embedder = document_embedder()
    for chunk in chunks:
        assert chunk.text == TEXT[chunk.start : chunk.end]
        assert chunk.token_count == count_tokens(chunk.text) <= settings.CHUNK_TOKENS
        assert len(chunk.embedding) == settings.EMBEDDING_DIM
        expected = embedder.embed([chunk.text])[0]
        assert list(chunk.embedding) == pytest.approx(expected, abs=1e-6)
    # Every sentence is indexed somewhere; the overlap repeats a sentence, never drops one.
    assert all(any(s in c.text for c in chunks) for s in SENTENCES)
    assert chunks[0].text.startswith(SENTENCES[0])
    assert chunks[-1].text.endswith(SENTENCES[-1])


def test_ingesting_twice_leaves_the_same_chunks(add_document, small_chunks):
    document = add_document(TEXT)
    first = snapshot(document)

    assert document_ingest(document_id=document.pk) == DocumentStatus.READY
    assert ingest_document(str(document.pk)) == DocumentStatus.READY  # the Celery task

    assert snapshot(document) == first
    assert Chunk.objects.filter(document=document).count() == len(first)
    assert Document.objects.get(pk=document.pk).status == DocumentStatus.READY


def test_reingest_schedules_the_task_again_after_commit(
    add_document, small_chunks, django_capture_on_commit_callbacks
):
    document = add_document(TEXT)
    first = snapshot(document)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        document_reingest(document=document)
    assert len(callbacks) == 1
    assert Document.objects.get(pk=document.pk).status == DocumentStatus.PENDING
    callbacks[0]()

    assert Document.objects.get(pk=document.pk).status == DocumentStatus.READY
    assert snapshot(document) == first


def test_ingestion_waits_for_the_commit(env, admin_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        document = document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Later",
            data=b"Nothing happens before the transaction commits.",
            media_type="text/plain",
        )
        assert Document.objects.get(pk=document.pk).status == DocumentStatus.PENDING
        assert not Chunk.objects.filter(document=document).exists()
    assert len(callbacks) == 1
    callbacks[0]()
    assert Document.objects.get(pk=document.pk).status == DocumentStatus.READY


def test_corrupt_pdf_fails_with_a_reason_and_no_chunks(add_document):
    document = add_document(
        b"%PDF-1.4\n1 0 obj << /Type /Catalog garbage", media_type="application/pdf"
    )

    assert document.status == DocumentStatus.FAILED
    assert "unreadable PDF" in document.error
    assert not Chunk.objects.filter(document=document).exists()


def test_valid_pdf_is_ingested(add_document):
    pdf = make_pdf([["Quarterly revenue grew by twelve percent."], ["Costs fell slightly."]])
    document = add_document(pdf, media_type="application/pdf", source_name="q3.pdf")

    assert document.status == DocumentStatus.READY
    text = " ".join(document.chunks.values_list("text", flat=True))
    assert "Quarterly revenue grew by twelve percent." in text
    assert "Costs fell slightly." in text


@pytest.mark.parametrize("text", [b"", b"   \n\n\t  "])
def test_document_without_text_fails(add_document, text):
    document = add_document(text)

    assert document.status == DocumentStatus.FAILED
    assert "no text" in document.error
    assert not Chunk.objects.filter(document=document).exists()


def test_text_that_is_not_text_fails(add_document):
    document = add_document(b"\xff\xfe\x00\x00binary\x00junk\x00", media_type="text/plain")

    assert document.status == DocumentStatus.FAILED
    assert document.error
    assert not Chunk.objects.filter(document=document).exists()


class FailingSecondBatch:
    """The local embedder, except that its second call fails as a provider would."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 2:
            raise EmbeddingError("provider unavailable (HTTP 503)")
        return document_embedder().embed(texts)


def test_embedding_failure_midway_leaves_no_chunks_old_or_new(
    add_document, small_chunks, monkeypatch, settings, django_capture_on_commit_callbacks
):
    document = add_document(TEXT)
    good = snapshot(document)
    assert len(good) > 2

    failing = FailingSecondBatch(settings.EMBEDDING_DIM)
    monkeypatch.setattr(indexing, "EMBED_BATCH", 2)
    monkeypatch.setattr(indexing, "document_embedder", lambda: failing)
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)

    failed = Document.objects.get(pk=document.pk)
    assert failing.calls == 2  # the first batch was embedded, then the provider failed
    assert failed.status == DocumentStatus.FAILED
    assert failed.error == "provider unavailable (HTTP 503)"
    assert not Chunk.objects.filter(document=document).exists()
    assert failed.chunk_count == 0

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)

    fixed = Document.objects.get(pk=document.pk)
    assert (fixed.status, fixed.error, fixed.chunk_count) == (DocumentStatus.READY, "", len(good))
    assert snapshot(document) == good


class Misbehaving:
    """An embedder that answers without raising, but not what was asked for."""

    def __init__(self, dimension: int, *, drop: int = 0, size: int | None = None) -> None:
        self.dimension = dimension
        self.drop = drop
        self.size = size or dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[0.5] * self.size for _ in texts[self.drop :]]


@pytest.mark.parametrize(("drop", "size"), [(1, None), (0, 3)], ids=["too-few", "wrong-size"])
def test_embedder_answering_unusable_vectors_fails_the_document(
    add_document, monkeypatch, settings, django_capture_on_commit_callbacks, drop, size
):
    document = add_document(TEXT)
    monkeypatch.setattr(
        indexing,
        "document_embedder",
        lambda: Misbehaving(settings.EMBEDDING_DIM, drop=drop, size=size),
    )
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)

    failed = Document.objects.get(pk=document.pk)
    assert failed.status == DocumentStatus.FAILED
    assert failed.error
    assert not Chunk.objects.filter(document=document).exists()


def test_misconfigured_embedder_fails_the_document(
    add_document, settings, django_capture_on_commit_callbacks
):
    document = add_document(TEXT)
    settings.EMBEDDING_PROVIDER = "no-such-provider"
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)

    failed = Document.objects.get(pk=document.pk)
    assert failed.status == DocumentStatus.FAILED
    assert "no-such-provider" in failed.error
    assert not Chunk.objects.filter(document=document).exists()


def test_deleting_a_document_deletes_its_chunks(add_document, small_chunks):
    document = add_document(TEXT)
    keep = add_document("Another document stays.")
    assert Chunk.objects.filter(document=document).count() > 1

    document_delete(document=document)

    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert Chunk.objects.filter(document=keep).count() == 1


def test_a_document_deleted_before_its_task_runs_is_skipped(
    env, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        document = document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Gone",
            data=b"Deleted before ingestion.",
            media_type="text/plain",
        )
    document_delete(document=document)
    callbacks[0]()  # must not raise

    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert document_ingest(document_id=document.pk) == DocumentStatus.FAILED


def test_every_chunk_is_stored_with_its_vector_as_the_column_holds_it(
    add_document, small_chunks, settings
):
    document = add_document(TEXT)

    pieces = split(TEXT, size=settings.CHUNK_TOKENS, overlap=settings.CHUNK_OVERLAP)
    vectors = document_embedder().embed([p.text for p in pieces])
    stored = list(Chunk.objects.filter(document=document).order_by("position"))
    assert [(c.position, c.text, c.token_count, c.start, c.end) for c in stored] == [
        (p.position, p.text, p.token_count, p.start, p.end) for p in pieces
    ]
    # The column is float4: each component is the float32 nearest the embedder's, exactly.
    for chunk, vector in zip(stored, vectors, strict=True):
        assert np.array_equal(np.array(chunk.embedding, np.float32), np.array(vector, np.float32))
    assert Document.objects.get(pk=document.pk).chunk_count == len(pieces) > 3


def test_a_row_refused_midway_through_the_copy_leaves_the_earlier_chunks(
    add_document, small_chunks, settings
):
    document = add_document(TEXT)
    before = snapshot(document)
    other = "A different text. " * 40
    pieces = split(other, size=settings.CHUNK_TOKENS, overlap=settings.CHUNK_OVERLAP)
    vectors = document_embedder().embed([p.text for p in pieces])
    middle = len(pieces) // 2
    vectors[middle] = [float("nan")] * settings.EMBEDDING_DIM  # pgvector refuses NaN
    assert 0 < middle < len(pieces) - 1

    with pytest.raises(DataError, match="NaN"):
        indexing._store(document.pk, pieces, vectors)

    # _store's own transaction took back the old chunks' DELETE and the rows sent before
    # the refused one, together.
    assert snapshot(document) == before
    assert Document.objects.get(pk=document.pk).chunk_count == len(before)


class NanHalfway:
    """The local embedder, except that the vector of the middle text is not a number."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = document_embedder().embed(texts)
        vectors[len(vectors) // 2] = [float("nan")] * self.dimension
        return vectors


def test_a_vector_the_database_refuses_fails_the_document_with_no_chunks(
    add_document, small_chunks, monkeypatch, settings, django_capture_on_commit_callbacks
):
    document = add_document(TEXT)
    monkeypatch.setattr(indexing, "document_embedder", lambda: NanHalfway(settings.EMBEDDING_DIM))
    with django_capture_on_commit_callbacks(execute=True):
        document_reingest(document=document)

    failed = Document.objects.get(pk=document.pk)
    assert (failed.status, failed.chunk_count) == (DocumentStatus.FAILED, 0)
    assert "NaN" in failed.error
    assert not Chunk.objects.filter(document=document).exists()


# Committed for real (the commit is what the setting is about); the database restored after
# as the other transactional tests here restore it.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_only_the_ingestion_commit_skips_the_wal_flush(env, admin_user):
    with CaptureQueriesContext(connection) as captured:
        document = document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Async commit",
            data=TEXT.encode(),
            media_type="text/plain",
        )  # autocommit: ingested in this thread as the upload commits

    assert Document.objects.get(pk=document.pk).status == DocumentStatus.READY
    assert "SET LOCAL synchronous_commit = off" in [q["sql"] for q in captured]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)  # the session's own setting is back
