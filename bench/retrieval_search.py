"""Retrieval at scale: build time, search latency and recall over 100,000 chunks.

    .venv/bin/python bench/retrieval_search.py [--quick] [--db private|shared]

A synthetic corpus with topic structure (2,000 documents x 50 chunks; `--quick`: 200 x 50)
is generated and embedded with the project's local embedder (384 dimensions), then loaded
into `retrieval_chunk` with COPY (`Document.chunk_count` filled as ingestion fills it), with
the HNSW and GIN indexes dropped before and built after, as the migration declares them.

Then `retrieval.search.search` as shipped, over the same queries, vector top-10 and hybrid
top-10, unfiltered, with a narrow HxQL filter and with a broad one:

- latency: search() end to end, and the SQL of all its statements (the scope aggregate,
  set_config, the search statement, an exact re-run), with how many statements a search
  took and which path its vector half took (exact, HNSW at an ef_search, HNSW then exact),
  next to what `vector_plan` decides for the filter's chunks;
- recall@10 of what search() returns against exact search, sweeping HNSW_EF_SEARCH
  (40/100/200/400) unfiltered, for short queries and for paragraphs; with each filter,
  search() as shipped, search() sent down its HNSW path where it chose exact, and the
  counterfactual that motivated vector_plan: the index's 40 nearest chunks, then the filter;
- EXPLAIN (ANALYZE, BUFFERS) of the search statement of each case's slowest search, as
  search() built it and with the hnsw.ef_search it set;
- the same in an environment holding a tenth of the chunks (the rest in another one);
- the goals (vector p95 < 20 ms, hybrid with a filter p95 < 50 ms, recall@10 >= 0.95), per
  case, on search() as shipped.

Prints figures; asserts nothing about time.
"""

# A seeded corpus, not secrets: random.Random is what is wanted here.
# ruff: noqa: S311

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import random
import re
import struct
import time
import uuid
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from common import Database, arguments, machine, percentile, prepare, table

DIM = 384
CHUNKS_PER_DOCUMENT = 50
DEPARTMENTS = (
    "finance",
    "legal",
    "engineering",
    "sales",
    "marketing",
    "hr",
    "operations",
    "support",
)
DOC_TYPES = ("policy", "report", "manual", "memo", "faq")
YEARS = tuple(range(2018, 2026))
REGIONS = ("emea", "amer", "apac", "global")
TOPICS_PER_DEPARTMENT = 5
TOPIC_WORDS = 80
GENERAL_WORDS = 3000
# English function words: the full-text configuration drops them, the embedder does not.
FUNCTION_WORDS = [
    *("the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "with", "was"),
    *("on", "be", "by", "this", "are", "from", "at", "or", "an", "have", "not", "which"),
    *("but", "all", "their", "has", "were", "been", "will", "can", "more", "its", "also"),
    *("should", "must", "into", "when", "each", "any", "after", "before", "under", "over"),
]
# Shares of a chunk's words: function words, its own topic, the document's other topic,
# the general vocabulary.
MIX = {"function": 0.40, "main": 0.25, "other": 0.08, "general": 0.27}
SEED = 20261121

FILTER = "SELECT * FROM SysContent WHERE department = 'finance' AND year >= 2022"
# Nearly every document (7 years of 8): a filter the planner cannot tell from a narrow one.
BROAD_FILTER = "SELECT * FROM SysContent WHERE year >= 2019"
TOP_K = 10
GOAL_VECTOR_P95_MS = 20.0
GOAL_HYBRID_P95_MS = 50.0
GOAL_RECALL = 0.95
# The session settings of the index builds (the server's defaults are left alone).
BUILD_SETTINGS = {"maintenance_work_mem": "1GB"}
# HNSW_EF_SEARCH values the unfiltered recall is measured at.
EF_SWEEP = (40, 100, 200, 300, 400, 600, 800)


# ---------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Vocabulary:
    topics: list[list[str]]  # TOPIC_WORDS words each, most frequent first
    general: list[str]
    topic_weights: list[float]  # cumulative Zipf weights over a topic's words
    general_weights: list[float]

    @property
    def department_topics(self) -> dict[str, list[int]]:
        return {
            department: list(range(i * TOPICS_PER_DEPARTMENT, (i + 1) * TOPICS_PER_DEPARTMENT))
            for i, department in enumerate(DEPARTMENTS)
        }


def vocabulary() -> Vocabulary:
    """Pronounceable made-up words: 40 topics of 80 words and 3,000 general words."""
    rng = random.Random(SEED)
    taken = set(FUNCTION_WORDS)
    consonants, vowels, endings = "bdfgklmnprtvz", "aeiou", "nrlkt"

    def word() -> str:
        while True:
            syllables = rng.choice((2, 2, 3, 3, 4))
            text = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
            if rng.random() < 0.5:
                text += rng.choice(endings)
            if text not in taken:
                taken.add(text)
                return text

    topics = [[word() for _ in range(TOPIC_WORDS)] for _ in range(len(DEPARTMENTS) * 5)]
    general = [word() for _ in range(GENERAL_WORDS)]
    return Vocabulary(
        topics=topics,
        general=general,
        topic_weights=list(itertools.accumulate(1 / r for r in range(1, TOPIC_WORDS + 1))),
        general_weights=list(itertools.accumulate(1 / r**1.1 for r in range(1, GENERAL_WORDS + 1))),
    )


@dataclass(frozen=True)
class DocumentSpec:
    id: uuid.UUID
    title: str
    doc_type: str
    metadata: dict[str, Any]
    topics: tuple[int, int]


def document_specs(count: int, vocab: Vocabulary) -> list[DocumentSpec]:
    """Department uniform among 8, year 2018-2025, doc_type among 5; the main topic is one
    of the department's five four times in five, the second topic any other."""
    rng = random.Random(SEED + 1)
    topics_of = vocab.department_topics
    specs = []
    for number in range(count):
        department = rng.choice(DEPARTMENTS)
        if rng.random() < 0.8:
            main = rng.choice(topics_of[department])
        else:
            main = rng.randrange(len(vocab.topics))
        other = rng.choice([t for t in range(len(vocab.topics)) if t != main])
        doc_type = rng.choice(DOC_TYPES)
        year = rng.choice(YEARS)
        title = f"{department} {doc_type} {year}-{number:04d}: {' '.join(vocab.topics[main][:3])}"
        specs.append(
            DocumentSpec(
                id=uuid.UUID(int=rng.getrandbits(128), version=4),
                title=title,
                doc_type=doc_type,
                metadata={
                    "department": department,
                    "year": year,
                    "region": rng.choice(REGIONS),
                    "confidential": rng.random() < 0.2,
                },
                topics=(main, other),
            )
        )
    return specs


def chunk_text(rng: random.Random, vocab: Vocabulary, main: int, other: int) -> str:
    """80-150 words in sentences of 6-16 words, mixed from the four sources of MIX."""
    size = rng.randint(80, 150)
    counts = {source: round(size * share) for source, share in MIX.items()}
    words = [
        *rng.choices(FUNCTION_WORDS, k=counts["function"]),
        *rng.choices(vocab.topics[main], cum_weights=vocab.topic_weights, k=counts["main"]),
        *rng.choices(vocab.topics[other], cum_weights=vocab.topic_weights, k=counts["other"]),
        *rng.choices(vocab.general, cum_weights=vocab.general_weights, k=counts["general"]),
    ]
    rng.shuffle(words)
    sentences, start = [], 0
    while start < len(words):
        end = start + rng.randint(6, 16)
        sentence = " ".join(words[start:end])
        sentences.append(sentence[:1].upper() + sentence[1:] + ".")
        start = end
    return " ".join(sentences)


class Packed(bytes):
    """A vector already in pgvector's binary format."""


def packed(vector: list[float]) -> bytes:
    """pgvector's binary input: dimension, unused, then big-endian float4s."""
    values = array("f", vector)
    values.byteswap()  # a little-endian host: every machine this runs on
    return struct.pack(">HH", len(values), 0) + values.tobytes()


# (document index, position, text, token_count, start, end, packed vector)
ChunkRow = tuple[int, int, str, int, int, int, bytes]


def _document_chunks(job: tuple[int, int]) -> list[ChunkRow]:
    """The chunks of documents [first, last), embedded. Runs in a worker process."""
    from retrieval.chunking import count_tokens
    from retrieval.embedders.local import LocalEmbedder

    first, last = job
    vocab = _VOCAB
    embedder = LocalEmbedder(dimension=DIM)
    rows: list[ChunkRow] = []
    for index in range(first, last):
        main, other = _SPECS[index].topics
        rng = random.Random(SEED * 1_000_003 + index)
        offset = 0
        texts = []
        for _ in range(CHUNKS_PER_DOCUMENT):
            # Most chunks are about the document's main topic, some about its other one.
            a, b = (main, other) if rng.random() < 0.75 else (other, main)
            texts.append(chunk_text(rng, vocab, a, b))
        vectors = embedder.embed(texts)
        for position, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            end = offset + len(text)
            rows.append((index, position, text, count_tokens(text), offset, end, packed(vector)))
            offset = end + 1
    return rows


_VOCAB: Vocabulary
_SPECS: list[DocumentSpec]


def generate(documents: int) -> tuple[Vocabulary, list[DocumentSpec], list[ChunkRow]]:
    """The corpus, embedded, in two worker processes (fork: they inherit the vocabulary)."""
    global _VOCAB, _SPECS
    _VOCAB = vocabulary()
    _SPECS = document_specs(documents, _VOCAB)
    step = 25
    jobs = [(i, min(i + step, documents)) for i in range(0, documents, step)]
    rows: list[ChunkRow] = []
    with multiprocessing.get_context("fork").Pool(os.cpu_count() or 2) as pool:
        for part in pool.imap(_document_chunks, jobs):
            rows.extend(part)
    return _VOCAB, _SPECS, rows


@dataclass(frozen=True)
class Query:
    text: str
    topic: int


def queries(vocab: Vocabulary, count: int) -> list[Query]:
    """2-4 distinct words of one topic (uniform among the 40), drawn from its 25 most
    frequent by the same Zipf weights as the texts."""
    rng = random.Random(SEED + 2)
    result = []
    for _ in range(count):
        topic = rng.randrange(len(vocab.topics))
        size = rng.choice((2, 3, 3, 4))
        words: list[str] = []
        while len(words) < size:
            word = rng.choices(vocab.topics[topic][:25], cum_weights=vocab.topic_weights[:25])[0]
            if word not in words:
                words.append(word)
        result.append(Query(" ".join(words), topic))
    return result


# ---------------------------------------------------------------- build


@dataclass
class Build:
    parts: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def timed(parts: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    parts[name] = time.perf_counter() - started


def build(db: Database, specs: list[DocumentSpec], rows: list[ChunkRow]) -> tuple[Any, Build]:
    """Documents and chunks in, the two indexes rebuilt; each part timed."""
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import Environment
    from retrieval.models import Chunk, Document, DocumentStatus

    result = Build()
    environment = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    indexes = {index.name: index for index in Chunk._meta.indexes}
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")  # the bench database
        for name in indexes:
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
    connection.close()

    with db.connect(db.name) as conn:
        conn.add_notice_handler(lambda diag: result.notices.append(diag.message_primary or ""))
        vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
        _register_packed(conn, vector_oid)
        with timed(result.parts, "load documents (COPY)"):
            _copy_documents(conn, specs, environment.pk, DocumentStatus.READY)
        with timed(result.parts, "load chunks (COPY; tsvector computed)"):
            _copy_chunks(conn, specs, rows, vector_oid)
        for name, value in BUILD_SETTINGS.items():
            conn.execute(f"SET {name} = '{value}'")
        for name in ("maintenance_work_mem", "max_parallel_maintenance_workers", "shared_buffers"):
            result.settings[name] = str(conn.execute(f"SHOW {name}").fetchone()[0])
        hnsw = indexes["chunk_embedding_hnsw"]
        for name, label in (
            (
                "chunk_embedding_hnsw",
                f"HNSW index (m={hnsw.m}, ef_construction={hnsw.ef_construction})",
            ),
            ("chunk_search_vector_gin", "GIN index (tsvector)"),
        ):
            sql = _index_sql(Chunk, indexes[name])
            with timed(result.parts, label):
                conn.execute(sql)
        with timed(result.parts, "VACUUM ANALYZE (not in the build time)"):
            conn.execute("VACUUM ANALYZE retrieval_document")
            conn.execute("VACUUM ANALYZE retrieval_chunk")
        for relation in (
            "retrieval_chunk",
            "chunk_embedding_hnsw",
            "chunk_search_vector_gin",
            "retrieval_document",
        ):
            size = conn.execute("SELECT pg_total_relation_size(%s)", [relation]).fetchone()
            result.sizes[relation] = int(size[0])
    count = Document.objects.count(), Chunk.objects.count()
    connection.close()
    assert count == (len(specs), len(rows)), count
    return environment.pk, result


def _index_sql(model: Any, index: Any) -> str:
    """The CREATE INDEX statement the migration runs for `index`."""
    from django.db import connection

    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        editor.add_index(model, index)
    return str(editor.collected_sql[0]).rstrip(";")


def _register_packed(conn: Any, vector_oid: int) -> None:
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class PackedDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    # Found by the column's type (COPY's set_types), whatever the Python value's class.
    conn.adapters.register_dumper(Packed, PackedDumper)


def _copy_documents(conn: Any, specs: list[DocumentSpec], environment_id: Any, ready: str) -> None:
    import json
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    columns = (
        "id, environment_id, title, doc_type, metadata, source_name, media_type, source,"
        " status, error, created_at, ingested_at, chunk_count, idempotency_key"
    )
    with (
        conn.cursor() as cursor,
        cursor.copy(f"COPY retrieval_document ({columns}) FROM STDIN") as copy,
    ):
        for spec in specs:
            copy.write_row(
                (
                    spec.id,
                    environment_id,
                    spec.title,
                    spec.doc_type,
                    json.dumps(spec.metadata),
                    f"{spec.title}.txt",
                    "text/plain",
                    b"(synthetic: the chunks are loaded directly)",
                    ready,
                    "",
                    now,
                    now,
                    CHUNKS_PER_DOCUMENT,  # as ingestion records it; search reads it
                    "",  # no Idempotency-Key (the column has no database default)
                )
            )


def _copy_chunks(
    conn: Any, specs: list[DocumentSpec], rows: list[ChunkRow], vector_oid: int
) -> None:
    columns = 'document_id, position, text, token_count, start, "end", embedding'
    types = ["uuid", "int4", "text", "int4", "int4", "int4", vector_oid]
    sql = f"COPY retrieval_chunk ({columns}) FROM STDIN WITH (FORMAT BINARY)"
    with conn.cursor() as cursor, cursor.copy(sql) as copy:
        copy.set_types(types)
        for index, position, text, tokens, start, end, vector in rows:
            copy.write_row((specs[index].id, position, text, tokens, start, end, vector))


# ---------------------------------------------------------------- searches

Statement = tuple[str, Any]
# A search statement as search() ran it, with the hnsw.ef_search set for it (None: exact).
Captured = tuple[str, Any, int | None]


class StatementLog:
    """A Django execute wrapper around search(): every statement of one search timed (the
    scope aggregate, set_config, the search statement, a possible exact re-run), the path
    its vector half took, and its last search statement (`WITH hits ...`), to EXPLAIN."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.statements = 0
        self.efs: list[int] = []  # the hnsw.ef_search values set, in order
        self.searches = 0  # search statements (a second one: the exact re-run)
        self.last: Captured | None = None

    def reset(self) -> None:
        self.seconds, self.statements, self.efs, self.searches = 0.0, 0, [], 0
        self.last = None

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)  # psycopg fetches the rows in it
        finally:
            self.seconds += time.perf_counter() - started
            self.statements += 1
            if "hnsw.ef_search" in sql:
                self.efs.append(int(params[0]))
            elif sql.startswith("WITH hits"):
                self.searches += 1
                # set_config comes right before the statement it is for; a re-run has none.
                ef = self.efs[-1] if len(self.efs) == self.searches else None
                self.last = (sql, params, ef)

    @property
    def path(self) -> str:
        if not self.efs:
            return "exact"
        again = ", then exact" if self.searches > len(self.efs) else ""
        return f"HNSW ef {self.efs[0]}{again}"


@dataclass
class Run:
    """search() over a list of queries, one at a time, after warm-up ones."""

    total: list[float] = field(default_factory=list)  # search() end to end
    sql: list[float] = field(default_factory=list)  # all its statements, execute and fetch
    statements: list[int] = field(default_factory=list)
    paths: Counter[str] = field(default_factory=Counter)
    found: list[list[int]] = field(default_factory=list)  # the chunk ids returned
    slowest: Captured | None = None  # the last search statement of the slowest search
    slowest_seconds: float = 0.0

    @property
    def rows(self) -> list[int]:
        return [len(ids) for ids in self.found]

    def paths_text(self) -> str:
        if len(self.paths) == 1:
            return next(iter(self.paths))
        return ", ".join(f"{path}: {n}" for path, n in self.paths.most_common())


# A query: the text (what the reranker reads) and its vector.
Item = tuple[str, list[float]]


def run_searches(
    environment_id: Any,
    items: list[Item],
    *,
    hxql: str,
    hybrid: bool,
    warmup: int,
    overrides: dict[str, Any] | None = None,
) -> Run:
    """retrieval.search.search(limit=TOP_K, reranker_top_n=TOP_K) for each query, with the
    settings `overrides` (none: as shipped)."""
    from django.db import connection
    from django.test import override_settings

    from retrieval.hxql import parse_hxql
    from retrieval.search import SearchRequest, search

    where = parse_hxql(hxql)
    log = StatementLog()
    run = Run()
    with override_settings(**(overrides or {})), connection.execute_wrapper(log):
        for number, (text, vector) in enumerate([*items[:warmup], *items]):
            request = SearchRequest(
                query=text, filter=where, limit=TOP_K, hybrid=hybrid, reranker_top_n=TOP_K
            )
            log.reset()
            started = time.perf_counter()
            nodes = search(environment_id=environment_id, request=request, vector=vector)
            elapsed = time.perf_counter() - started
            if number >= warmup:
                run.total.append(elapsed)
                run.sql.append(log.seconds)
                run.statements.append(log.statements)
                run.paths[log.path] += 1
                run.found.append([node.chunk_id for node in nodes])
                if elapsed >= run.slowest_seconds:
                    run.slowest, run.slowest_seconds = log.last, elapsed
    return run


@dataclass(frozen=True)
class Plan:
    """What search() decides before searching: the chunks the filter leaves (counted from
    Document.chunk_count), those in the HNSW index, and vector_plan's answer."""

    chunks: int
    indexed: int
    path: str


def planned(environment_id: Any, hxql: str, overrides: dict[str, Any] | None = None) -> Plan:
    from django.test import override_settings

    from retrieval import search
    from retrieval.hxql import parse_hxql

    with override_settings(**(overrides or {})):
        scope = search._scope(environment_id, parse_hxql(hxql))
        ef = search.vector_plan(scope, TOP_K)
    return Plan(scope.chunks, scope.indexed, "exact" if ef is None else f"HNSW ef {ef}")


# ---------------------------------------------------------------- recall

Ranking = list[tuple[int, float]]


@dataclass
class Recall:
    strict: list[float] = field(default_factory=list)  # |found ∩ exact| / |exact|
    tied: list[float] = field(default_factory=list)  # found at most as far as the exact 10th
    returned: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    hnsw: bool = False  # the plan (of the first query) scans chunk_embedding_hnsw

    def add(self, found: Ranking, exact: Ranking, seconds: float) -> None:
        self.seconds.append(seconds)
        self.returned.append(len(found))
        if exact:
            wanted = {i for i, _ in exact}
            bound = exact[-1][1] + 1e-6
            self.strict.append(len(wanted & {i for i, _ in found}) / len(wanted))
            self.tied.append(min(1.0, sum(d <= bound for _, d in found) / len(wanted)))

    @staticmethod
    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else float("nan")


def _ranking(chunks: Any, vector: list[float]) -> Statement:
    """`ORDER BY embedding <=> q LIMIT TOP_K` over a queryset of chunks."""
    from pgvector.django import CosineDistance

    ranking = (
        chunks.annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values_list("id", "distance")[:TOP_K]
    )
    sql, params = ranking.query.sql_with_params()
    return sql, params


def run_ranking(statement: Statement, *, ef: int | None) -> tuple[Ranking, float]:
    """Run a ranking with hnsw.ef_search = ef, or exactly (ef None: index scans off, so
    PostgreSQL computes every distance that passes the filter)."""
    from django.db import connection, transaction

    sql, params = statement
    with transaction.atomic(), connection.cursor() as cursor:
        if ef is None:
            cursor.execute("SET LOCAL enable_indexscan = off")
        else:
            cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        started = time.perf_counter()
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        elapsed = time.perf_counter() - started
    return [(int(i), float(d)) for i, d in rows], elapsed


def uses_hnsw(statement: Statement, ef: int) -> bool:
    return plan_uses(explain(*statement, ef, analyze=False), "chunk_embedding_hnsw")


def _searched(environment_id: Any, hxql: str) -> Any:
    """The documents search() searches: the environment's ready ones passing the filter."""
    from retrieval.hxql import parse_hxql
    from retrieval.search import _documents

    return _documents(environment_id, parse_hxql(hxql))


# How many exact nearest chunks of the whole environment are kept per query, to find the
# nearest chunks passing a filter among them.
DEEP = 100
Nearest = list[tuple[int, float, Any]]  # (chunk id, distance, document id), nearest first


def exact_nearest(environment_id: Any, vectors: list[list[float]]) -> list[Nearest]:
    """Per query, the DEEP nearest chunks of the environment's ready documents, every
    distance computed (index scans off)."""
    from django.db import connection, transaction
    from pgvector.django import CosineDistance

    from retrieval.models import Chunk

    chunks = Chunk.objects.filter(document__in=_searched(environment_id, EVERYTHING))
    result = []
    for vector in vectors:
        nearest = (
            chunks.annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("id", "distance", "document_id")[:DEEP]
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
            result.append([(int(i), float(d), document) for i, d, document in nearest])
    return result


def exact_rankings(
    environment_id: Any,
    hxql: str,
    vectors: list[list[float]],
    nearest: list[Nearest] | None = None,
) -> list[Ranking]:
    """The truth: the nearest chunks of the searched documents, every distance computed.
    Where at least TOP_K of `nearest` (exact, over a superset of those chunks) pass the
    filter, the first TOP_K of them are it; otherwise it is computed here."""
    from retrieval.models import Chunk

    documents = _searched(environment_id, hxql)
    chunks = Chunk.objects.filter(document__in=documents)
    passing = set(documents.values_list("id", flat=True))
    rankings = []
    for number, vector in enumerate(vectors):
        kept = (
            [(i, d) for i, d, document in nearest[number] if document in passing] if nearest else []
        )
        if len(kept) >= TOP_K:
            rankings.append(kept[:TOP_K])
        else:
            rankings.append(run_ranking(_ranking(chunks, vector), ef=None)[0])
    return rankings


def filtered_after(documents: Any, vector: list[float], ef: int) -> Statement:
    """The counterfactual: the HNSW index's `ef` nearest chunks of any environment, then the
    filter, and nothing more (no exact re-run): what pgvector 0.6 does with a filter when
    the planner picks the index, whatever share of its candidates the filter keeps."""
    from pgvector.django import CosineDistance

    from retrieval.models import Chunk

    nearest = (
        Chunk.objects.annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values("id", "document_id", "distance")[:ef]
    )
    nearest_sql, nearest_params = nearest.query.sql_with_params()
    documents_sql, documents_params = documents.values("id").query.sql_with_params()
    # Django-compiled SQL and constant fragments; every value is a parameter.
    sql = (
        f"SELECT id, distance FROM ({nearest_sql}) AS nearest"  # noqa: S608
        f" WHERE document_id IN ({documents_sql}) ORDER BY distance, id LIMIT %s"
    )
    return sql, (*nearest_params, *documents_params, TOP_K)


@dataclass
class RecallRow:
    case: str
    chunks: int
    how: str  # what ran
    path: str  # the path(s) search() took, or the counterfactual's
    recall: Recall  # seconds: search() end to end, or the counterfactual's statement
    shipped: bool = False  # search() with the settings as shipped


def search_recall(
    environment_id: Any,
    case: str,
    hxql: str,
    items: list[Item],
    exact: list[Ranking],
    *,
    overrides: dict[str, Any] | None = None,
    run: Run | None = None,
    warmup: int = 10,
) -> RecallRow:
    """The recall@10 of what search() returns (vector, limit 10, reranker_top_n 10: the
    reranker reorders the ten, it keeps them all), with the settings `overrides`; `run`:
    those searches, already run."""
    if run is None:
        run = run_searches(
            environment_id, items, hxql=hxql, hybrid=False, warmup=warmup, overrides=overrides
        )
    how = "search()" + "".join(f", {k}={v}" for k, v in (overrides or {}).items())
    recall = Recall(hnsw=any(path.startswith("HNSW") for path in run.paths))
    for found, wanted, seconds in zip(run.found, exact, run.total, strict=True):
        recall.add([(i, 0.0) for i in found], wanted, seconds)
    plan = planned(environment_id, hxql, overrides)
    return RecallRow(case, plan.chunks, how, run.paths_text(), recall, not overrides)


def counterfactual_recall(
    environment_id: Any,
    case: str,
    hxql: str,
    vectors: list[list[float]],
    exact: list[Ranking],
    *,
    ef: int = 40,
    warmup: int = 10,
) -> RecallRow:
    documents = _searched(environment_id, hxql)
    recall = Recall(hnsw=uses_hnsw(filtered_after(documents, vectors[0], ef), ef))
    for vector in vectors[:warmup]:
        run_ranking(filtered_after(documents, vector, ef), ef=ef)
    for vector, wanted in zip(vectors, exact, strict=True):
        found, seconds = run_ranking(filtered_after(documents, vector, ef), ef=ef)
        recall.add(found, wanted, seconds)
    plan = planned(environment_id, hxql)
    path = f"HNSW ef {ef}" if recall.hnsw else "NOT HNSW (the plan did not scan the index)"
    return RecallRow(case, plan.chunks, f"counterfactual: HNSW ef {ef}, filter after", path, recall)


FORCED_HNSW = {"RETRIEVAL_EXACT_MAX_CHUNKS": 0}  # search() down its HNSW path


def filter_recalls(
    environment_id: Any,
    case: str,
    hxql: str,
    items: list[Item],
    exact: list[Ranking],
    shipped: Run,
) -> list[RecallRow]:
    """search() as shipped (`shipped`: its vector top-10 searches, already run), on its HNSW
    path if it chose exact, and the counterfactual."""
    configs: list[dict[str, Any]] = [{}]
    if planned(environment_id, hxql).path == "exact":
        configs.append(FORCED_HNSW)
    rows = [
        search_recall(
            environment_id, case, hxql, items, exact, overrides=o, run=None if o else shipped
        )
        for o in configs
    ]
    vectors = [vector for _, vector in items]
    rows.append(counterfactual_recall(environment_id, case, hxql, vectors, exact))
    return rows


def ef_sweep(
    environment_id: Any,
    case: str,
    hxql: str,
    items: list[Item],
    exact: list[Ranking],
    *,
    shipped: Run | None = None,
    warmup: int = 10,
) -> list[RecallRow]:
    """search() as shipped (`shipped`: those searches if already run) and at each
    HNSW_EF_SEARCH of EF_SWEEP; on its HNSW path (RETRIEVAL_EXACT_MAX_CHUNKS=0) where as
    shipped it compares every chunk (`--quick`), as the ef_search would not matter."""
    from django.conf import settings

    forced = FORCED_HNSW if planned(environment_id, hxql).path == "exact" else {}
    configs: list[dict[str, Any]] = [{}] if forced else []
    for ef in sorted({*EF_SWEEP, settings.HNSW_EF_SEARCH}):
        configs.append(
            {} if ef == settings.HNSW_EF_SEARCH and not forced else {**forced, "HNSW_EF_SEARCH": ef}
        )
    return [
        search_recall(
            environment_id,
            case,
            hxql,
            items,
            exact,
            overrides=o,
            run=None if o else shipped,
            warmup=warmup,
        )
        for o in configs
    ]


# ---------------------------------------------------------------- plans


def explain(sql: str, params: Any, ef: int | None, *, analyze: bool = True) -> list[str]:
    """EXPLAIN a statement with hnsw.ef_search = ef set as search() sets it (None: not set)."""
    from django.db import connection, transaction

    options = "ANALYZE, BUFFERS" if analyze else "COSTS OFF"
    with transaction.atomic(), connection.cursor() as cursor:
        if ef is not None:
            cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        cursor.execute(f"EXPLAIN ({options}) {sql}", params)
        return [shortened(row[0]) for row in cursor.fetchall()]


VECTOR_LITERAL = re.compile(r"'\[[-0-9.,e]+\]'::vector")


def shortened(line: str) -> str:
    """A plan line without the query's vector (384 numbers)."""
    return VECTOR_LITERAL.sub("'[q]'::vector", line)


def plan_uses(lines: list[str], name: str) -> bool:
    return any(name in line for line in lines)


# ---------------------------------------------------------------- report


def ms(value: float) -> str:
    return f"{value * 1000:.1f}"


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="private").parse_args()
    documents = 200 if args.quick else 2000
    sizes = (
        Sizes(queries=100, paragraphs=20, broad=20)
        if args.quick
        else Sizes(queries=200, paragraphs=50, broad=50)
    )
    print(machine())
    # The local embedder at 384 dimensions, whatever the environment says.
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_DIM"] = str(DIM)

    started = time.perf_counter()
    vocab, specs, rows = generate(documents)
    generation = time.perf_counter() - started
    words = sum(len(text.split()) for _, _, text, *_ in rows)
    print(
        f"corpus: {len(specs)} documents x {CHUNKS_PER_DOCUMENT} chunks = {len(rows)} chunks, "
        f"{words / len(rows):.0f} words a chunk on average (80-150), {len(vocab.topics)} topics "
        f"of {TOPIC_WORDS} words, {GENERAL_WORDS} general words; generated and embedded "
        f"(local embedder, {DIM} dimensions, {os.cpu_count()} processes) in {generation:.1f} s "
        "(not in the build time)"
    )
    db = prepare(args.db)
    try:
        return measure(db, vocab, specs, rows, sizes)
    finally:
        from django.db import connections

        connections.close_all()
        db.close()
        print(f"done; {machine()}")


@dataclass(frozen=True)
class Sizes:
    queries: int  # timed queries per search, and recall queries
    paragraphs: int  # paragraphs as queries, for recall only
    broad: int  # timed queries of hybrid + broad filter (up to a second each in a trial)
    warmup: int = 20


def measure(
    db: Database,
    vocab: Vocabulary,
    specs: list[DocumentSpec],
    rows: list[ChunkRow],
    sizes: Sizes,
) -> int:
    environment_id, built = build(db, specs, rows)
    del rows
    report_build(built)
    items = embedded_queries(vocab, sizes.queries)
    runs = report_latency(environment_id, items, sizes)
    nearest = exact_nearest(environment_id, [vector for _, vector in items])
    recalls = report_recall(environment_id, items, runs, nearest)
    report_paragraphs(environment_id, vocab, sizes)
    report_plans(runs)
    share_runs, share_recalls = report_environment_share(environment_id, items, nearest)
    report_goals({**runs, **share_runs}, [*recalls, *share_recalls])
    return 0


def report_build(built: Build) -> None:
    build_time = sum(v for k, v in built.parts.items() if "not in" not in k)
    print(
        f"\nbuild ({', '.join(f'{k} = {v}' for k, v in built.settings.items())}; "
        f"set in the loading session, for the index builds: "
        f"{', '.join(f'{k} = {v}' for k, v in BUILD_SETTINGS.items())})"
    )
    print(
        table(
            ["part", "s"],
            [
                *[[name, f"{seconds:.1f}"] for name, seconds in built.parts.items()],
                ["build time (load + HNSW + GIN)", f"{build_time:.1f}"],
            ],
        )
    )
    print(
        "sizes: "
        + ", ".join(f"{name} {size / 2**20:.0f} MiB" for name, size in built.sizes.items())
        + " (the table's size includes its TOAST and indexes)"
    )
    for notice in built.notices:
        print(f"  server notice: {notice}")


def embedded_queries(vocab: Vocabulary, count: int) -> list[Item]:
    from retrieval.indexing import document_embedder

    embedder = document_embedder()
    embed_times, items = [], []
    for query in queries(vocab, count):
        started = time.perf_counter()
        [vector] = embedder.embed([query.text])
        embed_times.append(time.perf_counter() - started)
        items.append((query.text, vector))
    print(
        f"\n{count} queries, 2-4 words of one topic (e.g. {items[0][0]!r}); embedding one "
        f"(document_embedder(), local): p50 {percentile(embed_times, 50) * 1000:.2f} ms, "
        "not in the figures below"
    )
    return items


def platform_settings() -> str:
    from django.conf import settings

    return (
        f"RETRIEVAL_EXACT_MAX_CHUNKS={settings.RETRIEVAL_EXACT_MAX_CHUNKS}, "
        f"HNSW_EF_SEARCH={settings.HNSW_EF_SEARCH}"
    )


EVERYTHING = "SELECT * FROM SysContent"
# (name, hybrid, filter, on Sizes.broad queries only)
LATENCY_CASES = (
    ("vector", False, EVERYTHING, False),
    ("vector + filter", False, FILTER, False),
    ("hybrid", True, EVERYTHING, False),
    ("hybrid + filter", True, FILTER, False),
    ("vector + broad filter", False, BROAD_FILTER, False),
    ("hybrid + broad filter", True, BROAD_FILTER, True),
)
LATENCY_HEADERS = [
    "search",
    "chunks",
    "vector_plan",
    "queries",
    "search() p50 ms",
    "p95",
    "max",
    "SQL p50 ms",
    "p95",
    "max",
    "statements",
    "path taken",
    "results",
    "fewer than 10",
]


def latency_row(name: str, plan: Plan, run: Run) -> list[Any]:
    return [
        name,
        plan.chunks,
        plan.path,
        len(run.total),
        ms(percentile(run.total, 50)),
        ms(percentile(run.total, 95)),
        ms(max(run.total)),
        ms(percentile(run.sql, 50)),
        ms(percentile(run.sql, 95)),
        ms(max(run.sql)),
        f"{Recall.mean([float(n) for n in run.statements]):.2f}",
        run.paths_text(),
        f"{Recall.mean([float(n) for n in run.rows]):.1f}",
        sum(r < TOP_K for r in run.rows),
    ]


LATENCY_NOTE = (
    "(chunks: those the filter leaves, counted by search() from Document.chunk_count, of "
    "{indexed} in the HNSW index; vector_plan: its decision for them, exact = every chunk "
    "compared; search(): the call end to end, in this process: the scope aggregate, "
    "building and running the statement, reranking; SQL: the execute and fetch of all its "
    "statements (scope aggregate, set_config, search statement, any exact re-run), from a "
    "Django execute wrapper; statements: their number per search, mean; path taken: per "
    "search, from the statements run (set_config's ef_search; a second search statement "
    "is the exact re-run); results: mean)"
)


def report_latency(environment_id: Any, items: list[Item], sizes: Sizes) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    plans: dict[str, Plan] = {}
    for name, hybrid, hxql, few in LATENCY_CASES:
        plans[name] = planned(environment_id, hxql)
        count = sizes.broad if few else len(items)
        runs[name] = run_searches(
            environment_id,
            items[:count],
            hxql=hxql,
            hybrid=hybrid,
            warmup=min(sizes.warmup, max(1, count // 10)) if few else sizes.warmup,
        )
    print(
        f"\nsearch latency, top-{TOP_K}: retrieval.search.search(limit={TOP_K}, "
        f"reranker_top_n={TOP_K}) as shipped ({platform_settings()}); one query at a time "
        f"after {sizes.warmup} warm-up queries; hybrid + broad filter on {sizes.broad} queries "
        f"after {min(sizes.warmup, max(1, sizes.broad // 10))}"
    )
    print(f"filter: {FILTER}\nbroad filter: {BROAD_FILTER}")
    print(table(LATENCY_HEADERS, [latency_row(n, plans[n], runs[n]) for n in runs]))
    print(LATENCY_NOTE.format(indexed=plans["vector"].indexed))
    return runs


RECALL_HEADERS = [
    "case",
    "chunks",
    "what ran",
    "path",
    "recall@10",
    "rows (mean)",
    "fewer than 10",
    "p50 ms",
    "p95 ms",
]


def recall_row(row: RecallRow) -> list[Any]:
    recall = row.recall
    return [
        row.case,
        row.chunks,
        row.how + (" (as shipped)" if row.shipped else ""),
        row.path,
        f"{recall.mean(recall.strict):.3f}",
        f"{Recall.mean([float(r) for r in recall.returned]):.1f}",
        sum(r < TOP_K for r in recall.returned),
        ms(percentile(recall.seconds, 50)),
        ms(percentile(recall.seconds, 95)),
    ]


RECALL_NOTE = (
    "(recall@10: of the chunk ids search(hybrid=False, limit=10, reranker_top_n=10) "
    "returns, against exact search: ORDER BY embedding <=> q LIMIT 10 over the chunks of "
    f"the searched documents with enable_indexscan = off (the first 10 of the environment's "
    f"exact {DEEP} nearest that pass the filter, where 10 do); the reranker reorders the "
    "ten, it keeps them all. p50/p95: search() end to end, as shipped: the searches of the "
    "latency table, the others after 10 warm-up queries; for the counterfactual, its "
    "statement. counterfactual: the HNSW index's 40 nearest chunks of any environment, "
    "then the filter, with no exact re-run: what pgvector 0.6 does with a filter whenever "
    "the planner picks the index, the plan that motivated vector_plan)"
)


def report_recall(
    environment_id: Any, items: list[Item], runs: dict[str, Run], nearest: list[Nearest]
) -> list[RecallRow]:
    vectors = [vector for _, vector in items]
    exact = exact_rankings(environment_id, EVERYTHING, vectors, nearest)
    rows = ef_sweep(environment_id, "unfiltered", EVERYTHING, items, exact, shipped=runs["vector"])
    for case, hxql, name in (
        ("filter", FILTER, "vector + filter"),
        ("broad filter", BROAD_FILTER, "vector + broad filter"),
    ):
        exact = exact_rankings(environment_id, hxql, vectors, nearest)
        rows.extend(filter_recalls(environment_id, case, hxql, items, exact, runs[name]))
    print(
        f"\nrecall@{TOP_K} of search() against exact search, {len(items)} queries; "
        f"shipped: {platform_settings()}"
    )
    print(table(RECALL_HEADERS, [recall_row(row) for row in rows]))
    print(RECALL_NOTE)
    return rows


def report_paragraphs(environment_id: Any, vocab: Vocabulary, sizes: Sizes) -> None:
    """Unfiltered recall for queries shaped like the chunks: is a low recall the index's,
    or that of short queries, whose vectors (a few words hashed into 384 dimensions) are
    unlike every vector in the index?"""
    from retrieval.indexing import document_embedder

    rng = random.Random(SEED + 3)
    texts = [
        chunk_text(rng, vocab, topic, rng.randrange(len(vocab.topics)))
        for topic in [rng.randrange(len(vocab.topics)) for _ in range(sizes.paragraphs)]
    ]
    vectors = document_embedder().embed(texts)
    items = list(zip(texts, vectors, strict=True))
    exact = exact_rankings(environment_id, EVERYTHING, vectors)
    figures = [
        f"{row.how.removeprefix('search(), ') if not row.shipped else 'as shipped'}: "
        f"{row.recall.mean(row.recall.strict):.3f} [{row.path}]"
        for row in ef_sweep(environment_id, "paragraphs", EVERYTHING, items, exact, warmup=0)
    ]
    print(
        f"unfiltered recall@10 of search() for {len(items)} queries that are paragraphs "
        "(80-150 words, written as the chunks are): " + "; ".join(figures)
    )


EXPLAINED = ("vector", "vector + filter", "hybrid + filter", "hybrid + broad filter")


def explained(name: str, run: Run) -> tuple[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the search statement of the run's slowest search, with
    the ef_search search() set for it, as text; and which indexes the plan scans."""
    assert run.slowest is not None
    sql, params, ef = run.slowest
    lines = explain(sql, params, ef)
    how = "exact" if ef is None else f"hnsw.ef_search {ef}"
    text = "\n".join(
        [
            f"\nEXPLAIN (ANALYZE, BUFFERS) of search()'s statement, {name}, its slowest query "
            f"({ms(run.slowest_seconds)} ms in the run; {how}, set as search() sets it):",
            *(f"  {line}" for line in lines),
        ]
    )
    hnsw = plan_uses(lines, "chunk_embedding_hnsw")
    gin = plan_uses(lines, "chunk_search_vector_gin")
    expected = "as decided" if hnsw == (ef is not None) else "NOT as decided"
    summary = (
        f"{name} ({how}): chunk_embedding_hnsw {'yes' if hnsw else 'no'} ({expected}), "
        f"chunk_search_vector_gin {'yes' if gin else 'no'}"
    )
    return text, summary


def report_plans(runs: dict[str, Run]) -> None:
    summaries = []
    for name in EXPLAINED:
        text, summary = explained(name, runs[name])
        print(text)
        summaries.append(summary)
    print("\nplans: " + "; ".join(summaries))


def report_environment_share(
    environment_id: Any, items: list[Item], nearest: list[Nearest]
) -> tuple[dict[str, Run], list[RecallRow]]:
    """The same searches in an environment holding a tenth of the chunks: HNSW indexes every
    environment's chunks together, and the environment is a filter like any other."""
    from django.db import connection

    from agents.models import Environment
    from retrieval.models import Document

    total = Document.objects.count()
    kept = total // 10
    other = Environment.objects.create(name=f"bench-other-{os.getpid()}")
    runs: dict[str, Run] = {}
    plans: dict[str, Plan] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE retrieval_document SET environment_id = %s WHERE id NOT IN"
                " (SELECT id FROM retrieval_document ORDER BY id LIMIT %s)",
                [other.pk, kept],
            )
            cursor.execute("ANALYZE retrieval_document")
        for name, hybrid in (
            ("vector, 10 % environment", False),
            ("hybrid, 10 % environment", True),
        ):
            plans[name] = planned(environment_id, EVERYTHING)
            runs[name] = run_searches(
                environment_id, items, hxql=EVERYTHING, hybrid=hybrid, warmup=10
            )
        vectors = [vector for _, vector in items]
        exact = exact_rankings(environment_id, EVERYTHING, vectors, nearest)
        recalls = filter_recalls(
            environment_id,
            "10 % environment",
            EVERYTHING,
            items,
            exact,
            runs["vector, 10 % environment"],
        )
        plan = explained("vector, 10 % environment", runs["vector, 10 % environment"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")  # the bench database
        Environment.objects.filter(pk=other.pk).delete()
    print(
        f"\nthe searched environment holding {kept} of the {total} documents (the rest moved "
        f"to another environment), no HxQL filter, {len(items)} queries, after 10 warm-up "
        f"queries; as shipped ({platform_settings()}):"
    )
    print(table(LATENCY_HEADERS, [latency_row(n, plans[n], runs[n]) for n in runs]))
    print(table(RECALL_HEADERS, [recall_row(row) for row in recalls]))
    print(
        "(columns as in the tables above; RETRIEVAL_EXACT_MAX_CHUNKS=0: the same search() "
        "sent down its HNSW path, with the ef_search vector_plan gives this share)"
    )
    text, summary = plan
    print(f"{text}\nplan: {summary}")
    return runs, recalls


def report_goals(runs: dict[str, Run], recalls: list[RecallRow]) -> None:
    lines = []
    for name in (
        "vector",
        "vector + filter",
        "vector + broad filter",
        "vector, 10 % environment",
    ):
        p95 = percentile(runs[name].total, 95)
        lines.append(
            [
                f"vector top-10 p95 < {GOAL_VECTOR_P95_MS:g} ms",
                name,
                runs[name].paths_text(),
                f"{ms(p95)} ms",
                met(p95 * 1000 < GOAL_VECTOR_P95_MS),
            ]
        )
    for name in ("hybrid + filter", "hybrid + broad filter", "hybrid, 10 % environment"):
        p95 = percentile(runs[name].total, 95)
        lines.append(
            [
                f"hybrid top-10 with a filter p95 < {GOAL_HYBRID_P95_MS:g} ms",
                name,
                runs[name].paths_text(),
                f"{ms(p95)} ms",
                met(p95 * 1000 < GOAL_HYBRID_P95_MS),
            ]
        )
    for row in recalls:
        if row.shipped:
            value = row.recall.mean(row.recall.strict)
            lines.append(
                [
                    f"recall@10 >= {GOAL_RECALL}",
                    row.case,
                    row.path,
                    f"{value:.3f}",
                    met(value >= GOAL_RECALL),
                ]
            )
    print(f"\ngoals, search() as shipped ({platform_settings()}):")
    print(table(["goal", "case", "path taken", "value", ""], lines))
    missed = sum(line[-1] != "met" for line in lines)
    print(
        f"goals: {len(lines) - missed} of {len(lines)} met"
        + (f", {missed} NOT met" if missed else "")
    )


if __name__ == "__main__":
    raise SystemExit(main())
