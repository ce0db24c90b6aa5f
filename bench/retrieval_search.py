"""Retrieval at scale: build time, search latency and HNSW recall over 100,000 chunks.

    .venv/bin/python bench/retrieval_search.py [--quick] [--db private|shared]

A synthetic corpus with topic structure (2,000 documents x 50 chunks; `--quick`: 200 x 50)
is generated and embedded with the project's local embedder (384 dimensions), then loaded
into `retrieval_chunk` with COPY, with the HNSW and GIN indexes dropped before and built
after, as the migration declares them. Then, over the same queries: the latency of
`retrieval.search.search` (vector top-10 and hybrid top-10, without and with an HxQL
filter) and of its one SQL statement, and the recall@10 of the platform's vector ranking
against exact search. Prints figures; asserts nothing about time.
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
FILTER_DEPARTMENT = "finance"
# Nearly every document (7 years of 8): a filter the planner cannot tell from a narrow one.
BROAD_FILTER = "SELECT * FROM SysContent WHERE year >= 2019"
TOP_K = 10
GOAL_VECTOR_P95_MS = 20.0
GOAL_HYBRID_P95_MS = 50.0
GOAL_RECALL = 0.95
# The session settings of the index builds (the server's defaults are left alone).
BUILD_SETTINGS = {"maintenance_work_mem": "1GB"}
EF_SWEEP = (100, 200, 400)


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

    from agents.models import Environment
    from agents.selectors import DEFAULT_ENVIRONMENT
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
        vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]  # type: ignore[index]
        _register_packed(conn, vector_oid)
        with timed(result.parts, "load documents (COPY)"):
            _copy_documents(conn, specs, environment.pk, DocumentStatus.READY)
        with timed(result.parts, "load chunks (COPY; tsvector computed)"):
            _copy_chunks(conn, specs, rows, vector_oid)
        for name, value in BUILD_SETTINGS.items():
            conn.execute(f"SET {name} = '{value}'")
        for name in ("maintenance_work_mem", "max_parallel_maintenance_workers", "shared_buffers"):
            result.settings[name] = str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
        for name, label in (
            ("chunk_embedding_hnsw", "HNSW index (m=16, ef_construction=64)"),
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
            result.sizes[relation] = int(size[0])  # type: ignore[index]
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
        " status, error, created_at, ingested_at"
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


# ---------------------------------------------------------------- search latency


@dataclass
class Timing:
    total: list[float] = field(default_factory=list)  # search() end to end
    sql: list[float] = field(default_factory=list)  # its one statement (execute + fetch)
    rows: list[int] = field(default_factory=list)


class StatementTimer:
    """A Django execute wrapper: times the search statement (`WITH hits ...`)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.last: tuple[str, Any] | None = None

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if not sql.startswith("WITH hits"):
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.times.append(time.perf_counter() - started)
            self.last = (sql, params)


def latency(
    environment_id: Any,
    items: list[tuple[Query, list[float]]],
    *,
    hybrid: bool,
    hxql: str,
    warmup: int,
) -> tuple[Timing, tuple[str, Any]]:
    from django.db import connection

    from retrieval.hxql import parse_hxql
    from retrieval.search import SearchRequest, search

    where = parse_hxql(hxql)
    timer = StatementTimer()
    timing = Timing()
    with connection.execute_wrapper(timer):
        for number, (query, vector) in enumerate([*items[:warmup], *items]):
            request = SearchRequest(
                query=query.text, filter=where, limit=TOP_K, hybrid=hybrid, reranker_top_n=TOP_K
            )
            started = time.perf_counter()
            nodes = search(environment_id=environment_id, request=request, vector=vector)
            elapsed = time.perf_counter() - started
            if number >= warmup:
                timing.total.append(elapsed)
                timing.sql.append(timer.times[-1])
                timing.rows.append(len(nodes))
    assert timer.last is not None
    return timing, timer.last


# ---------------------------------------------------------------- recall

Ranking = list[tuple[int, float]]
Statement = tuple[str, Any]


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


def platform_ranking(environment_id: Any, hxql: str, vector: list[float]) -> Statement:
    """The vector half of search()'s statement, built as `_candidates` builds it."""
    from retrieval.hxql import parse_hxql
    from retrieval.models import Chunk
    from retrieval.search import _documents

    chunks = Chunk.objects.filter(document__in=_documents(environment_id, parse_hxql(hxql)))
    return _ranking(chunks, vector)


def listed_ranking(document_ids: list[Any], vector: list[float]) -> Statement:
    """The same ranking with the filter given as the matching documents' ids: PostgreSQL
    then knows how many rows pass it, and for a large share picks the HNSW index and
    filters its candidates (pgvector 0.6 has no other way to combine the two)."""
    from retrieval.models import Chunk

    return _ranking(Chunk.objects.filter(document_id__in=document_ids), vector)


def _ranking(chunks: Any, vector: list[float]) -> Statement:
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


@dataclass
class FilterRecall:
    label: str
    hxql: str
    documents: int
    platform: Recall
    platform_queries: int
    sweep: dict[int, Recall]  # ef_search -> recall, of the platform's statement or the listed one
    sweep_statement: str
    exact: Recall


def filter_recall(
    environment_id: Any,
    label: str,
    hxql: str,
    vectors: list[list[float]],
    *,
    ef: int,
    platform_queries: int,
) -> FilterRecall:
    from retrieval.hxql import parse_hxql
    from retrieval.search import _documents

    ids = list(_documents(environment_id, parse_hxql(hxql)).values_list("id", flat=True))
    exact, exact_runs = [], Recall()
    for vector in vectors:
        ranking, seconds = run_ranking(listed_ranking(ids, vector), ef=None)
        exact.append(ranking)
        exact_runs.add(ranking, ranking, seconds)
    platform = Recall(hnsw=uses_hnsw(platform_ranking(environment_id, hxql, vectors[0]), ef))
    for vector, wanted in zip(vectors[:platform_queries], exact, strict=False):
        found, seconds = run_ranking(platform_ranking(environment_id, hxql, vector), ef=ef)
        platform.add(found, wanted, seconds)

    # The ef_search sweep: of search()'s statement when its plan is HNSW's, else of the
    # listed form, whose plan is (for these filters) HNSW with the filter applied after.
    def searched(vector: list[float]) -> Statement:
        return platform_ranking(environment_id, hxql, vector)

    def listed(vector: list[float]) -> Statement:
        return listed_ranking(ids, vector)

    build_statement = searched if platform.hnsw else listed
    sweep_statement = "search()'s" if platform.hnsw else "listed ids"
    sweep = {}
    for value in (ef, *[e for e in EF_SWEEP if e != ef]):
        result = Recall(hnsw=uses_hnsw(build_statement(vectors[0]), value))
        for vector, wanted in zip(vectors, exact, strict=True):
            found, seconds = run_ranking(build_statement(vector), ef=value)
            result.add(found, wanted, seconds)
        sweep[value] = result
    return FilterRecall(
        label, hxql, len(ids), platform, platform_queries, sweep, sweep_statement, exact_runs
    )


def filter_estimate(environment_id: Any, hxql: str) -> tuple[float, int]:
    """The planner's estimate of the documents that pass an HxQL filter, and the truth."""
    import json

    from django.db import connection

    from retrieval.hxql import parse_hxql
    from retrieval.search import _documents

    sql, params = _documents(environment_id, parse_hxql(hxql)).values("id").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        raw = cursor.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return float(plan["Plan Rows"]), int(plan["Actual Rows"])


# ---------------------------------------------------------------- plans


def explain(sql: str, params: Any, ef: int, *, analyze: bool = True) -> list[str]:
    from django.db import connection, transaction

    options = "ANALYZE, BUFFERS" if analyze else "COSTS OFF"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        cursor.execute(f"EXPLAIN ({options}) {sql}", params)
        return [shortened(row[0]) for row in cursor.fetchall()]


VECTOR_LITERAL = re.compile(r"'\[[-0-9.,e]+\]'::vector")
ID_ARRAY = re.compile(r"'\{[0-9a-f,-]{200,}\}'")


def shortened(line: str) -> str:
    """A plan line without the query's vector (384 numbers) or a long list of ids."""
    line = VECTOR_LITERAL.sub("'[q]'::vector", line)
    return ID_ARRAY.sub(lambda m: f"'{{{m.group().count(',') + 1} ids}}'", line)


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
        Sizes(queries=100, broad=10, long_queries=20)
        if args.quick
        else Sizes(queries=200, broad=30, long_queries=50)
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
        db.close()
        print(f"done; {machine()}")


@dataclass(frozen=True)
class Sizes:
    queries: int  # timed queries per search, and recall queries
    broad: int  # timed queries with the broad filter (each scans most chunks), and recall
    long_queries: int  # paragraphs as queries, for recall only
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
    timings, statements = report_latency(environment_id, items, sizes)
    recalls = report_recall(environment_id, vocab, items, sizes)
    report_plans(statements)
    report_goals(timings, recalls)
    report_environment_share(environment_id, items, sizes)
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


def embedded_queries(vocab: Vocabulary, count: int) -> list[tuple[Query, list[float]]]:
    from retrieval.services import document_embedder

    embedder = document_embedder()
    embed_times, items = [], []
    for query in queries(vocab, count):
        started = time.perf_counter()
        [vector] = embedder.embed([query.text])
        embed_times.append(time.perf_counter() - started)
        items.append((query, vector))
    print(
        f"\n{count} queries, 2-4 words of one topic (e.g. {items[0][0].text!r}); embedding one "
        f"(document_embedder(), local): p50 {percentile(embed_times, 50) * 1000:.2f} ms, "
        "not in the figures below"
    )
    return items


def platform_ef() -> int:
    from retrieval.search import SearchRequest, _ef

    return _ef(SearchRequest(query="", limit=TOP_K))


def report_latency(
    environment_id: Any, items: list[tuple[Query, list[float]]], sizes: Sizes
) -> tuple[dict[str, Timing], dict[str, Statement]]:
    cases = [
        ("vector", False, "SELECT * FROM SysContent", sizes.queries),
        ("vector + filter", False, FILTER, sizes.queries),
        ("hybrid", True, "SELECT * FROM SysContent", sizes.queries),
        ("hybrid + filter", True, FILTER, sizes.queries),
        ("vector + broad filter", False, BROAD_FILTER, sizes.broad),
        ("hybrid + broad filter", True, BROAD_FILTER, sizes.broad),
    ]
    timings: dict[str, Timing] = {}
    statements: dict[str, Statement] = {}
    for name, hybrid, hxql, count in cases:
        timings[name], statements[name] = latency(
            environment_id,
            items[:count],
            hybrid=hybrid,
            hxql=hxql,
            warmup=sizes.warmup if count == sizes.queries else max(1, count // 10),
        )
    print(
        f"\nsearch latency, top-{TOP_K}: retrieval.search.search(limit={TOP_K}, "
        f"reranker_top_n={TOP_K}); hnsw.ef_search {platform_ef()} (the platform's for limit "
        f"{TOP_K}); one query at a time after {sizes.warmup} warm-up queries "
        f"({max(1, sizes.broad // 10)} for the broad filter)"
    )
    print(f"filter: {FILTER}\nbroad filter: {BROAD_FILTER}")
    print(
        table(
            [
                "search",
                "queries",
                "search() p50 ms",
                "p95",
                "max",
                "SQL p50 ms",
                "p95",
                "max",
                "results (mean)",
                "fewer than 10",
            ],
            [
                [
                    name,
                    len(t.total),
                    ms(percentile(t.total, 50)),
                    ms(percentile(t.total, 95)),
                    ms(max(t.total)),
                    ms(percentile(t.sql, 50)),
                    ms(percentile(t.sql, 95)),
                    ms(max(t.sql)),
                    f"{sum(t.rows) / len(t.rows):.1f}",
                    sum(r < TOP_K for r in t.rows),
                ]
                for name, t in timings.items()
            ],
        )
    )
    print(
        "(search(): the call end to end, in this process: building the statement, running "
        "it, reranking; SQL: that one statement's execute and fetch, from a Django execute "
        "wrapper)"
    )
    for label, hxql in (("filter", FILTER), ("broad filter", BROAD_FILTER)):
        estimated, actual = filter_estimate(environment_id, hxql)
        print(
            f"the planner's estimate of the documents passing the {label}: {estimated:.0f} "
            f"(actual {actual})"
        )
    return timings, statements


def report_recall(
    environment_id: Any, vocab: Vocabulary, items: list[tuple[Query, list[float]]], sizes: Sizes
) -> dict[str, FilterRecall]:
    ef = platform_ef()
    vectors = [vector for _, vector in items]
    results = {}
    for label, hxql in (
        ("unfiltered", "SELECT * FROM SysContent"),
        ("filter", FILTER),
        ("broad filter", BROAD_FILTER),
    ):
        results[label] = filter_recall(
            environment_id,
            label,
            hxql,
            vectors,
            ef=ef,
            platform_queries=sizes.broad if label == "broad filter" else sizes.queries,
        )
    print(
        f"\nrecall@{TOP_K} of the vector ranking (ORDER BY embedding <=> q LIMIT {TOP_K}) "
        f"against exact search (the same ranking with enable_indexscan = off), "
        f"{len(vectors)} queries ({sizes.broad} for search()'s statement with the broad filter)"
    )

    def row(result: FilterRecall, statement: str, ef_: str, recall_: Recall) -> list[Any]:
        return [
            result.label,
            f"{result.documents}",
            statement,
            ef_,
            "yes" if recall_.hnsw else "no",
            f"{recall_.mean(recall_.strict):.3f}",
            f"{recall_.mean(recall_.tied):.3f}",
            f"{Recall.mean([float(r) for r in recall_.returned]):.1f}",
            sum(r < TOP_K for r in recall_.returned),
            ms(percentile(recall_.seconds, 50)),
            ms(percentile(recall_.seconds, 95)),
        ]

    lines = []
    for result in results.values():
        lines.append(row(result, "search()'s", f"{ef}", result.platform))
        for value, recall_ in result.sweep.items():
            if value != ef or result.sweep_statement != "search()'s":
                lines.append(row(result, result.sweep_statement, f"{value}", recall_))
        lines.append(row(result, "exact", "-", result.exact))
    print(
        table(
            [
                "filter",
                "documents",
                "statement",
                "ef_search",
                "HNSW",
                "recall@10",
                "with ties",
                "rows (mean)",
                "fewer than 10",
                "SQL p50 ms",
                "p95",
            ],
            lines,
        )
    )
    print(
        "(statement: search()'s = the vector half of the platform's statement (document_id "
        "IN (SELECT id FROM retrieval_document WHERE <filter>)); listed ids = the same "
        "ranking with document_id IN (<the matching documents' ids>), whose plan is the "
        "HNSW index with the filter applied to its candidates; exact = listed ids with "
        "index scans off. HNSW: whether the plan scans chunk_embedding_hnsw. with ties: a "
        "result counts when it is no farther than the exact 10th. documents: those passing "
        "the filter, of 50 chunks each)"
    )
    listed = results["filter"].sweep.get(ef)
    if listed is not None and results["filter"].sweep_statement == "listed ids":
        finance = set(vocab.department_topics[FILTER_DEPARTMENT])
        by_topic: dict[bool, list[float]] = {True: [], False: []}
        for value, (query, _) in zip(listed.strict, items, strict=True):
            by_topic[query.topic in finance].append(value)
        print(
            f"filter, listed ids at ef_search {ef}, recall by the query's topic: "
            f"{FILTER_DEPARTMENT}'s {Recall.mean(by_topic[True]):.3f} "
            f"({len(by_topic[True])} queries), the others' {Recall.mean(by_topic[False]):.3f} "
            f"({len(by_topic[False])})"
        )
    report_long_queries(environment_id, vocab, sizes)
    return results


def report_long_queries(environment_id: Any, vocab: Vocabulary, sizes: Sizes) -> None:
    """Unfiltered recall for queries shaped like the chunks: is a low recall the index's,
    or that of short queries, whose vectors (a few words hashed into 384 dimensions) are
    unlike every vector in the index?"""
    from retrieval.services import document_embedder

    rng = random.Random(SEED + 3)
    texts = [
        chunk_text(rng, vocab, topic, rng.randrange(len(vocab.topics)))
        for topic in [rng.randrange(len(vocab.topics)) for _ in range(sizes.long_queries)]
    ]
    vectors = document_embedder().embed(texts)
    result = filter_recall(
        environment_id,
        "paragraphs",
        "SELECT * FROM SysContent",
        vectors,
        ef=platform_ef(),
        platform_queries=len(vectors),
    )
    print(
        f"unfiltered recall@10 for {len(vectors)} queries that are paragraphs (80-150 words, "
        "written as the chunks are), by ef_search: "
        + ", ".join(f"{value}: {r.mean(r.strict):.3f}" for value, r in result.sweep.items())
    )


def report_plans(statements: dict[str, Statement]) -> None:
    ef = platform_ef()
    plans = {}
    for name in ("vector", "hybrid + filter", "vector + filter", "hybrid + broad filter"):
        sql, params = statements[name]
        plans[name] = explain(sql, params, ef)
        print(f"\nEXPLAIN (ANALYZE, BUFFERS) of search()'s statement, {name}, its last query:")
        for line in plans[name]:
            print(f"  {line}")
    hybrid = plans["hybrid + filter"]
    print(
        "\nplans: vector scans chunk_embedding_hnsw: "
        f"{'yes' if plan_uses(plans['vector'], 'chunk_embedding_hnsw') else 'NO'}; "
        "hybrid + filter scans chunk_embedding_hnsw: "
        f"{'yes' if plan_uses(hybrid, 'chunk_embedding_hnsw') else 'no'}, "
        f"chunk_search_vector_gin: "
        f"{'yes' if plan_uses(hybrid, 'chunk_search_vector_gin') else 'no'}, "
        f"the filter (retrieval_document) in the same plan: "
        f"{'yes' if plan_uses(hybrid, 'retrieval_document') else 'NO'}"
    )


def report_goals(timings: dict[str, Timing], recalls: dict[str, FilterRecall]) -> None:
    vector_p95 = percentile(timings["vector"].total, 95)
    filtered_p95 = percentile(timings["vector + filter"].total, 95)
    hybrid_p95 = percentile(timings["hybrid + filter"].total, 95)
    unfiltered = recalls["unfiltered"].platform
    filtered = recalls["filter"].platform
    listed = recalls["filter"].sweep[platform_ef()]
    print(
        f"\ngoals: vector top-10 p95 < {GOAL_VECTOR_P95_MS:g} ms: "
        f"{met(vector_p95 * 1000 < GOAL_VECTOR_P95_MS)} ({ms(vector_p95)} ms; with the filter "
        f"{ms(filtered_p95)} ms); hybrid top-10 with the filter p95 < {GOAL_HYBRID_P95_MS:g} "
        f"ms: {met(hybrid_p95 * 1000 < GOAL_HYBRID_P95_MS)} ({ms(hybrid_p95)} ms); "
        f"recall@10 >= {GOAL_RECALL}: unfiltered "
        f"{met(unfiltered.mean(unfiltered.strict) >= GOAL_RECALL)} "
        f"({unfiltered.mean(unfiltered.strict):.3f}), with the filter "
        f"{met(filtered.mean(filtered.strict) >= GOAL_RECALL)} "
        f"({filtered.mean(filtered.strict):.3f}, "
        f"{'HNSW' if filtered.hnsw else 'exact: the plan does not use HNSW'}; HNSW with the "
        f"filter applied after it: {listed.mean(listed.strict):.3f})"
    )


def report_environment_share(
    environment_id: Any, items: list[tuple[Query, list[float]]], sizes: Sizes
) -> None:
    """The same searches in an environment holding a tenth of the chunks: HNSW indexes every
    environment's chunks together, and the environment is a filter like any other."""
    from django.db import connection

    from agents.models import Environment
    from retrieval.models import Document

    total = Document.objects.count()
    kept = total // 10
    other = Environment.objects.create(name=f"bench-other-{os.getpid()}")
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE retrieval_document SET environment_id = %s WHERE id NOT IN"
                " (SELECT id FROM retrieval_document ORDER BY id LIMIT %s)",
                [other.pk, kept],
            )
            cursor.execute("ANALYZE retrieval_document")
        everything = "SELECT * FROM SysContent"
        estimated, actual = filter_estimate(environment_id, everything)
        timing, _ = latency(environment_id, items, hybrid=False, hxql=everything, warmup=10)
        hybrid, _ = latency(environment_id, items, hybrid=True, hxql=everything, warmup=10)
        result = filter_recall(
            environment_id,
            "10 % environment",
            everything,
            [vector for _, vector in items],
            ef=platform_ef(),
            platform_queries=sizes.queries,
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")  # the bench database
        Environment.objects.filter(pk=other.pk).delete()
    platform = result.platform
    print(
        f"\nthe searched environment holding {kept} of the {total} documents (the rest moved "
        f"to another environment; the planner estimates {estimated:.0f} documents in it, "
        f"actual {actual}), no HxQL filter, {len(items)} queries:"
    )
    print(
        f"  search() vector top-10: p50 {ms(percentile(timing.total, 50))} ms, p95 "
        f"{ms(percentile(timing.total, 95))} ms, results {Recall.mean(timing.rows):.1f} on "
        f"average, fewer than 10 for {sum(r < TOP_K for r in timing.rows)} queries; hybrid: "
        f"p95 {ms(percentile(hybrid.total, 95))} ms, fewer than 10 for "
        f"{sum(r < TOP_K for r in hybrid.rows)}"
    )
    print(
        f"  search()'s vector ranking: plan {'HNSW' if platform.hnsw else 'without HNSW'}, "
        f"recall@10 {platform.mean(platform.strict):.3f}, rows {Recall.mean(platform.returned):.1f}"
        f" on average; the ef_search sweep ({result.sweep_statement}): "
        + ", ".join(
            f"{value}: recall {r.mean(r.strict):.3f}, rows {Recall.mean(r.returned):.1f}"
            for value, r in result.sweep.items()
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
