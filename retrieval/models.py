from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import HnswIndex, VectorField

# The text search configuration of the full-text index; a query must use the same one.
TS_CONFIG = "english"


class DocumentStatus(models.TextChoices):
    PENDING = "pending"
    READY = "ready"
    FAILED = "failed"


class Document(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # A string reference, not an import: retrieval never imports the agents app.
    environment = models.ForeignKey(
        "agents.Environment", on_delete=models.CASCADE, related_name="documents"
    )
    title = models.CharField(max_length=500)
    doc_type = models.CharField(max_length=100, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    source_name = models.CharField(max_length=255, blank=True)
    media_type = models.CharField(max_length=100)
    # The uploaded bytes (or the posted text): a worker on another host re-reads them.
    source = models.BinaryField()
    status = models.CharField(
        max_length=10, choices=DocumentStatus.choices, default=DocumentStatus.PENDING
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ingested_at = models.DateTimeField(null=True, blank=True)
    # Kept with the chunks (ingestion writes both in one transaction): search reads how
    # many chunks a filter leaves from the documents, without counting chunks.
    chunk_count = models.PositiveIntegerField(default=0, db_default=0)
    # Liveness (agentbuilder.liveness): while pending, the process that will ingest it, or
    # is ingesting it, renews this lease; once it has run out, that process is gone and any
    # other queues the document again, up to INGESTION_MAX_ATTEMPTS ingestions.
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    attempts = models.PositiveSmallIntegerField(default=0, db_default=0, editable=False)
    # The upload's Idempotency-Key header: the same key from the same caller is this document.
    idempotency_key = models.CharField(max_length=255, blank=True, editable=False)
    # SHA-256 of `source`: the same bytes uploaded again to the environment are this
    # document (retrieval.services.document_upload). Empty only on copies stored before
    # the column existed (migration 0008 hashes the oldest of each set of copies).
    content_hash = models.CharField(max_length=64, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["environment", "status"], name="document_env_status")]
        constraints = [
            models.UniqueConstraint(
                fields=["created_by", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="document_idempotency_key_unique_per_caller",
            ),
            models.UniqueConstraint(
                fields=["environment", "content_hash"],
                condition=~models.Q(content_hash=""),
                name="document_content_unique_per_env",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    start = models.PositiveIntegerField(default=0)  # character offsets in the document text
    end = models.PositiveIntegerField(default=0)
    embedding = VectorField(dimensions=settings.EMBEDDING_DIM)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config=TS_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_position_unique")
        ]
        indexes = [
            # m 16 / ef_construction 128, searched at ef_search 600 (HNSW_EF_SEARCH): on
            # 100,000 chunks of the local embedder, recall@10 0.956 to 0.964 where m 32 / 128
            # gives 0.97 at 300, and no slower (bench/hnsw_ab.py: p50 0.63x, the two
            # alternated). An insert costs PostgreSQL less than half as much: pgvector
            # rewrites the neighbour lists of up to 2m neighbours per row, pruning each
            # (bench/ingestion_store.py).
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"
