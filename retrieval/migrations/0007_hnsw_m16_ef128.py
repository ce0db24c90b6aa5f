from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations
from pgvector.django import HnswIndex

# Rebuilt concurrently: while the new index builds, ingestion goes on and searches run
# exactly (correct, slower) instead of waiting on a table lock for the whole build.
OLD = HnswIndex(
    name="chunk_embedding_hnsw",
    fields=["embedding"],
    m=32,
    ef_construction=128,
    opclasses=["vector_cosine_ops"],
)
NEW = HnswIndex(
    name="chunk_embedding_hnsw",
    fields=["embedding"],
    m=16,
    ef_construction=128,
    opclasses=["vector_cosine_ops"],
)


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("retrieval", "0006_document_liveness"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="chunk", name=OLD.name),
        AddIndexConcurrently(model_name="chunk", index=NEW),
    ]
