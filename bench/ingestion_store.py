"""The store stage alone: each way of writing a document's chunks, on the same chunks.

    .venv/bin/python bench/ingestion_store.py [--quick] [--rounds N] [--db private|shared]

The documents of bench/ingestion.py (100, about 20 chunks each; `--quick`: 30) are split
and embedded once, before anything is timed. Each variant then starts from empty tables
and an HNSW index built (on the empty table) with its `m` and `ef_construction`, and
stores every document in a transaction of its own, one after the other, as ingestion
does: lock the document, delete its chunks, write the new ones, mark it ready, commit.
The variants alternate, round after round (`--rounds`, default 3), so a machine shared
with others loads them alike; the figures are the medians over the rounds.

- `INSERT`: what `_store` did before: the ORM's `bulk_create` (one INSERT, the vectors
  as text), a synchronous commit.
- `COPY`: a binary COPY of the rows (the vectors in pgvector's binary form), a
  synchronous commit.
- `COPY, async commit` (`SET LOCAL synchronous_commit = off`): `retrieval.indexing._store`
  itself, as shipped.
- `+ maintenance_work_mem 1GB` (`SET LOCAL`): whether the insert uses it.
- `no HNSW index`: the floor, everything but the graph.
- `bulk: COPY, then CREATE INDEX`: the chunks stored without the HNSW index, then the
  index built over them (the build's time counted): what a bulk load could do where no
  one else uses the table.

Per variant: ms of wall time, of this process's CPU and of PostgreSQL's CPU per chunk,
and chunks/s. Prints figures; asserts nothing about time. Exits 1 if a variant stored
other chunks than the documents' (count, positions, vectors).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common import Database, machine, prepare, table
from ingestion import documents, postgres_cpu
from retrieval_search import DIM

Store = Callable[[uuid.UUID, list[Any], list[list[float]]], None]


@dataclass(frozen=True)
class Variant:
    name: str
    m: int | None  # None: no HNSW index while storing
    ef_construction: int = 128
    store: str = "shipped"  # insert, copy, shipped, maintenance
    build_after: bool = False  # CREATE INDEX (m, ef_construction) after the chunks


VARIANTS = (
    Variant("m 32: INSERT (before)", 32, store="insert"),
    Variant("m 32: COPY", 32, store="copy"),
    Variant("m 32: COPY, async commit", 32),
    Variant("m 16: INSERT", 16, store="insert"),
    Variant("m 16: COPY", 16, store="copy"),
    Variant("m 16: COPY, async commit (shipped)", 16),
    Variant("m 16: + maintenance_work_mem 1GB", 16, store="maintenance"),
    Variant("m 16, ef_construction 256: COPY, async commit", 16, 256),
    Variant("no HNSW index: COPY, async commit", None),
    Variant("bulk: COPY, then CREATE INDEX m 32", 32, build_after=True),
    Variant("bulk: COPY, then CREATE INDEX m 16", 16, build_after=True),
)


@dataclass
class Figures:
    wall: list[float] = field(default_factory=list)  # ms per chunk, one per round
    own: list[float] = field(default_factory=list)
    postgres: list[float] = field(default_factory=list)


def prepared(count: int, environment_id: Any) -> list[tuple[uuid.UUID, list[Any], list[Any]]]:
    """Pending documents with their pieces and vectors, made once."""
    from django.conf import settings

    from retrieval.chunking import split
    from retrieval.indexing import document_embedder
    from retrieval.models import Document

    embedder = document_embedder()
    work = []
    for upload in documents(count, seed=2):
        document = Document.objects.create(
            environment_id=environment_id,
            title=upload.title,
            media_type="text/plain",
            source=upload.data,
        )
        pieces = split(
            upload.data.decode(), size=settings.CHUNK_TOKENS, overlap=settings.CHUNK_OVERLAP
        )
        work.append((document.pk, pieces, embedder.embed([p.text for p in pieces])))
    return work


def reset(variant: Variant) -> None:
    """Empty chunks, the documents pending, the HNSW index as the variant wants it."""
    from django.db import connection

    from retrieval.models import Document, DocumentStatus

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE retrieval_chunk")
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        if variant.m is not None and not variant.build_after:
            cursor.execute(create_index(variant))
    Document.objects.update(status=DocumentStatus.PENDING, chunk_count=0)


def create_index(variant: Variant) -> str:
    return (
        "CREATE INDEX chunk_embedding_hnsw ON retrieval_chunk USING hnsw"
        f" (embedding vector_cosine_ops) WITH (m = {variant.m},"
        f" ef_construction = {variant.ef_construction})"
    )


def insert_store(document_id: uuid.UUID, pieces: list[Any], vectors: list[list[float]]) -> None:
    """`_store` before the change: the ORM's INSERT, a synchronous commit."""
    from django.db import transaction
    from django.utils import timezone

    from retrieval.models import Chunk, Document, DocumentStatus

    with transaction.atomic():
        if not Document.objects.select_for_update().filter(pk=document_id).exists():
            return
        Chunk.objects.filter(document_id=document_id).delete()
        Chunk.objects.bulk_create(
            Chunk(
                document_id=document_id,
                position=p.position,
                text=p.text,
                token_count=p.token_count,
                start=p.start,
                end=p.end,
                embedding=v,
            )
            for p, v in zip(pieces, vectors, strict=True)
        )
        Document.objects.filter(pk=document_id).update(
            status=DocumentStatus.READY,
            ingested_at=timezone.now(),
            chunk_count=len(pieces),
            lease_until=None,
        )


def copy_store(*settings: str) -> Store:
    """The shipped statements with the commit synchronous (no `settings`) or these
    `SET LOCAL`s in place of the shipped one."""
    from django.db import connection, transaction
    from django.utils import timezone

    from retrieval import indexing
    from retrieval.models import Chunk, Document, DocumentStatus

    def store(document_id: uuid.UUID, pieces: list[Any], vectors: list[list[float]]) -> None:
        with transaction.atomic():
            if not Document.objects.select_for_update().filter(pk=document_id).exists():
                return
            with connection.cursor() as cursor:
                for setting in settings:
                    cursor.execute(setting)
            Chunk.objects.filter(document_id=document_id).delete()
            indexing._copy_chunks(document_id, pieces, vectors)
            Document.objects.filter(pk=document_id).update(
                status=DocumentStatus.READY,
                ingested_at=timezone.now(),
                chunk_count=len(pieces),
                lease_until=None,
            )

    return store


def stores() -> dict[str, Store]:
    from retrieval import indexing

    return {
        "insert": insert_store,
        "copy": copy_store(),
        "shipped": indexing._store,
        "maintenance": copy_store(
            "SET LOCAL synchronous_commit = off", "SET LOCAL maintenance_work_mem = '1GB'"
        ),
    }


def run(db: Database, variant: Variant, work: list[Any], store: Store) -> tuple[float, ...]:
    from django.db import connection

    reset(variant)
    chunks = sum(len(pieces) for _, pieces, _ in work)
    own, postgres, started = time.process_time(), postgres_cpu(db), time.perf_counter()
    for document_id, pieces, vectors in work:
        store(document_id, pieces, vectors)
    if variant.build_after:
        with connection.cursor() as cursor:
            cursor.execute(create_index(variant))
    wall = time.perf_counter() - started
    own = time.process_time() - own
    pg = (postgres_cpu(db) or float("nan")) - (postgres or 0.0)
    return wall * 1000 / chunks, own * 1000 / chunks, pg * 1000 / chunks


def check(work: list[Any]) -> bool:
    """Every document's chunks stored: count, positions and vectors (as float4)."""
    import numpy as np

    from retrieval.models import Chunk

    for document_id, pieces, vectors in work[:5]:
        stored = list(Chunk.objects.filter(document_id=document_id).order_by("position"))
        if [c.position for c in stored] != [p.position for p in pieces]:
            return False
        for chunk, vector in zip(stored, vectors, strict=True):
            if not np.array_equal(
                np.array(chunk.embedding, np.float32), np.array(vector, np.float32)
            ):
                return False
    total = sum(len(pieces) for _, pieces, _ in work)
    return Chunk.objects.count() == total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", choices=("private", "shared"), default="private")
    args = parser.parse_args()
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_DIM"] = str(DIM)
    print(machine())
    db = prepare(args.db)
    try:
        return measure(db, 30 if args.quick else 100, args.rounds)
    finally:
        db.close()
        print(f"done; {machine()}")


def measure(db: Database, count: int, rounds: int) -> int:
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import Environment

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")
    environment = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    work = prepared(count, environment.pk)
    chunks = sum(len(pieces) for _, pieces, _ in work)
    print(f"{count} documents, {chunks} chunks, split and embedded before timing; {rounds} rounds")
    functions = stores()
    figures = {variant.name: Figures() for variant in VARIANTS}
    ok = True
    for number in range(rounds):
        order = VARIANTS if number % 2 == 0 else tuple(reversed(VARIANTS))
        for variant in order:
            wall, own, pg = run(db, variant, work, functions[variant.store])
            ok = check(work) and ok
            entry = figures[variant.name]
            entry.wall.append(wall)
            entry.own.append(own)
            entry.postgres.append(pg)
        print(f"round {number + 1} done; {machine()}")
    # The index as the migrations leave it, for whatever runs next on this database.
    from retrieval.models import Chunk

    reset(Variant("restore", None))
    with connection.schema_editor() as editor:
        editor.add_index(Chunk, next(i for i in Chunk._meta.indexes if "hnsw" in i.name))
    base = statistics.median(figures[VARIANTS[0].name].wall)
    rows = []
    for variant in VARIANTS:
        entry = figures[variant.name]
        wall = statistics.median(entry.wall)
        rows.append(
            [
                variant.name,
                f"{wall:.2f}",
                f"{statistics.median(entry.own):.2f}",
                f"{statistics.median(entry.postgres):.2f}",
                f"{1000 / wall:.0f}",
                f"{base / wall:.2f}",
                " / ".join(f"{w:.2f}" for w in entry.wall),
            ]
        )
    print()
    print(
        table(
            [
                "variant",
                "wall ms/chunk",
                "this process CPU",
                "PostgreSQL CPU",
                "chunks/s",
                "x before",
                "wall per round",
            ],
            rows,
        )
    )
    print(
        "(medians over the rounds; ms per chunk; x before: the first row's wall time over "
        "this row's; bulk rows include the CREATE INDEX)"
    )
    print(f"every variant stored every chunk with its vector: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
