"""HNSW parameters against recall@10 and latency: m, ef_construction and ef_search.

    .venv/bin/python bench/hnsw_params.py [--quick] [--params 16:64,16:128,24:100,32:64,32:128]

The corpus of `retrieval_search.py` (2,000 documents x 50 chunks = 100,000 chunks of 384
dimensions, the local embedder; `--quick`: 200 x 50) is generated and loaded ONCE on a
throwaway embedded server, and the exact top-10 of every query is computed once, before
any vector index exists. Then, for each (m, ef_construction): the HNSW index is dropped and
created again (`maintenance_work_mem = 1GB` in the building session, as `retrieval_search.py`
builds it), its build time and size printed, and for each ef_search: the recall@10 of
`SELECT id, embedding <=> q FROM retrieval_chunk ORDER BY embedding <=> q LIMIT 10` for the
200 short queries and the 50 paragraphs of `retrieval_search.py`, and that statement's
latency for the short queries, one at a time after 20 warm-up queries. At the smallest
ef_search reaching recall 0.95, `retrieval.search.search` (vector top-10, no filter) is
timed end to end too. Prints figures; asserts nothing about time.
"""

# A seeded corpus, not secrets: random.Random is what is wanted here.
# ruff: noqa: S311

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from common import Database, machine, percentile, prepare, table
from retrieval_search import (
    BUILD_SETTINGS,
    CHUNKS_PER_DOCUMENT,
    DIM,
    GOAL_RECALL,
    GOAL_VECTOR_P95_MS,
    SEED,
    TOP_K,
    ChunkRow,
    DocumentSpec,
    Query,
    Ranking,
    Recall,
    Statement,
    Vocabulary,
    _copy_chunks,
    _copy_documents,
    _ranking,
    _register_packed,
    chunk_text,
    generate,
    ms,
    queries,
    run_ranking,
    uses_hnsw,
)

PARAMS = ((16, 64), (16, 128), (24, 100), (32, 64), (32, 128))
QUICK_PARAMS = ((16, 64), (32, 64))
EF_SEARCH = (40, 100, 200, 300, 400, 600, 800, 1000)
INDEX = "chunk_embedding_hnsw"  # the model's name: plan checks look for it
WARMUP = 20


@dataclass(frozen=True)
class Sizes:
    documents: int
    queries: int
    paragraphs: int


@dataclass
class Point:
    ef: int
    short: Recall
    paragraphs: Recall
    hnsw: bool


@dataclass
class ParamSet:
    m: int
    ef_construction: int
    build_seconds: float = 0.0
    size: int = 0
    notices: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    # search() end to end (vector top-10) at the smallest ef_search reaching the goal
    search: SearchTiming | None = None
    search_error: str = ""

    @property
    def label(self) -> str:
        return f"m={self.m}, ef_construction={self.ef_construction}"

    def first_reaching(self, goal: float) -> Point | None:
        return next((p for p in self.points if p.short.mean(p.short.strict) >= goal), None)


# ---------------------------------------------------------------- corpus and load


def load(db: Database, specs: list[DocumentSpec], rows: list[ChunkRow]) -> tuple[Any, float]:
    """Documents and chunks in with COPY, no vector or text index (retrieval_search.build
    builds both of the model's indexes, which this script would drop at once: it reuses
    build's COPY helpers instead)."""
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import Environment
    from retrieval.models import Chunk, DocumentStatus

    environment = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE retrieval_chunk, retrieval_document")  # the bench database
        for index in Chunk._meta.indexes:
            cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
    connection.close()
    started = time.perf_counter()
    with db.connect(db.name) as conn:
        vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
        _register_packed(conn, vector_oid)
        _copy_documents(conn, specs, environment.pk, DocumentStatus.READY)
        _copy_chunks(conn, specs, rows, vector_oid)
        columns = conn.execute(
            "SELECT 1 FROM information_schema.columns"
            " WHERE table_name = 'retrieval_document' AND column_name = 'chunk_count'"
        )
        if columns.fetchone() is not None:  # search() reads it where the model has it
            conn.execute(
                "UPDATE retrieval_document d SET chunk_count = c.n FROM (SELECT document_id,"
                " count(*) AS n FROM retrieval_chunk GROUP BY document_id) c"
                " WHERE d.id = c.document_id"
            )
        conn.execute("VACUUM ANALYZE retrieval_document")
        conn.execute("VACUUM ANALYZE retrieval_chunk")
        count = conn.execute("SELECT count(*) FROM retrieval_chunk").fetchone()[0]
    assert count == len(rows), count
    return environment.pk, time.perf_counter() - started


def paragraph_texts(vocab: Vocabulary, count: int) -> list[str]:
    """The paragraph queries of retrieval_search.report_long_queries (copied: there they are
    made and measured in one function)."""
    rng = random.Random(SEED + 3)
    return [
        chunk_text(rng, vocab, topic, rng.randrange(len(vocab.topics)))
        for topic in [rng.randrange(len(vocab.topics)) for _ in range(count)]
    ]


def build_index(db: Database, params: ParamSet) -> None:
    """Drop the HNSW index and create it with params' m and ef_construction, timed."""
    with db.connect(db.name) as conn:
        for name, value in BUILD_SETTINGS.items():
            conn.execute(f"SET {name} = '{value}'")
        conn.execute(f'DROP INDEX IF EXISTS "{INDEX}"')
        conn.execute("CHECKPOINT")  # the previous build's writes are not this one's
        conn.add_notice_handler(lambda diag: params.notices.append(diag.message_primary or ""))
        started = time.perf_counter()
        conn.execute(
            f'CREATE INDEX "{INDEX}" ON retrieval_chunk USING hnsw (embedding vector_cosine_ops)'
            f" WITH (m = {params.m}, ef_construction = {params.ef_construction})"
        )
        params.build_seconds = time.perf_counter() - started
        params.size = int(conn.execute("SELECT pg_relation_size(%s)", [INDEX]).fetchone()[0])


# ---------------------------------------------------------------- measures


def nearest(vector: list[float]) -> Statement:
    """`ORDER BY embedding <=> q LIMIT 10` over every chunk (no filter: for this corpus,
    in one environment, search()'s vector half returns the same chunks)."""
    from retrieval.models import Chunk

    return _ranking(Chunk.objects.all(), vector)


def exact_rankings(vectors: list[list[float]]) -> list[Ranking]:
    """The nearest chunks with index scans off, while no vector index exists."""
    return [run_ranking(nearest(vector), ef=None)[0] for vector in vectors]


def sweep(
    params: ParamSet,
    short: list[list[float]],
    short_exact: list[Ranking],
    paragraphs: list[list[float]],
    paragraphs_exact: list[Ranking],
) -> None:
    for ef in EF_SEARCH:
        for vector in short[:WARMUP]:
            run_ranking(nearest(vector), ef=ef)
        point = Point(ef, Recall(), Recall(), uses_hnsw(nearest(short[0]), ef))
        for vectors, exact, recall in (
            (short, short_exact, point.short),
            (paragraphs, paragraphs_exact, point.paragraphs),
        ):
            for vector, wanted in zip(vectors, exact, strict=True):
                found, seconds = run_ranking(nearest(vector), ef=ef)
                recall.add(found, wanted, seconds)
        params.points.append(point)
        print("  " + "  ".join(str(cell) for cell in row(params, point)), flush=True)


@dataclass
class SearchTiming:
    seconds: list[float]
    recall: Recall
    how: str  # how ef_search was set
    set_to: set[str] = field(default_factory=set)  # the hnsw.ef_search values it set

    @property
    def ef_label(self) -> str:
        return ", ".join(sorted(self.set_to)) or "none (exact search)"


def search_at(
    environment_id: Any,
    items: list[tuple[Query, list[float]]],
    exact: list[Ranking],
    ef: int,
) -> SearchTiming:
    """retrieval.search.search (vector top-10, no filter) end to end, with its ef_search
    set to `ef`: through settings.HNSW_EF_SEARCH where search() reads it, else by replacing
    its `_ef` (the committed search() of 2026-11-21). Also the recall of what it returns:
    the proof that it ran at that ef_search."""
    from django.conf import settings
    from django.db import connection
    from django.test import override_settings

    import retrieval.search as module
    from retrieval.search import SearchRequest, search

    if hasattr(settings, "HNSW_EF_SEARCH"):
        setter: Any = override_settings(HNSW_EF_SEARCH=ef)
        how = f"HNSW_EF_SEARCH={ef}"
    elif hasattr(module, "_ef"):
        setter = mock.patch.object(module, "_ef", return_value=ef)
        how = f"_ef() = {ef}"
    else:
        raise RuntimeError("retrieval.search has neither settings.HNSW_EF_SEARCH nor _ef")
    result = SearchTiming([], Recall(), how)

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "hnsw.ef_search" in sql:
            result.set_to.add(str(params[0]))
        return execute(sql, params, many, context)

    with setter, connection.execute_wrapper(watch):
        for number, ((query, vector), wanted) in enumerate(
            [*zip(items[:WARMUP], exact, strict=False), *zip(items, exact, strict=True)]
        ):
            request = SearchRequest(
                query=query.text, limit=TOP_K, hybrid=False, reranker_top_n=TOP_K
            )
            started = time.perf_counter()
            nodes = search(environment_id=environment_id, request=request, vector=vector)
            elapsed = time.perf_counter() - started
            if number >= WARMUP:
                result.seconds.append(elapsed)
                result.recall.add([(n.chunk_id, 0.0) for n in nodes], wanted, elapsed)
    return result


# ---------------------------------------------------------------- report

HEADERS = [
    "m",
    "ef_construction",
    "build s",
    "index MiB",
    "ef_search",
    "HNSW",
    "recall@10 (short)",
    "recall@10 (paragraphs)",
    "p50 ms",
    "p95 ms",
]


def row(params: ParamSet, point: Point) -> list[Any]:
    return [
        params.m,
        params.ef_construction,
        f"{params.build_seconds:.1f}",
        f"{params.size / 2**20:.0f}",
        point.ef,
        "yes" if point.hnsw else "NO",
        f"{point.short.mean(point.short.strict):.3f}",
        f"{point.paragraphs.mean(point.paragraphs.strict):.3f}",
        ms(percentile(point.short.seconds, 50)),
        ms(percentile(point.short.seconds, 95)),
    ]


def report(results: list[ParamSet], sizes: Sizes) -> None:
    print(
        f"\nrecall@{TOP_K} against exact search and the statement's latency, by HNSW parameters "
        f"and ef_search ({sizes.queries} short queries, latency theirs, one at a time after "
        f"{WARMUP} warm-up queries; {sizes.paragraphs} paragraphs, recall only)"
    )
    print(table(HEADERS, [row(p, point) for p in results for point in p.points]))
    print(
        f"(statement: ORDER BY embedding <=> q LIMIT {TOP_K} over every chunk; p50/p95: its "
        "execute and fetch; HNSW: whether its plan scans the index; build s: CREATE INDEX "
        "alone, the table loaded)"
    )

    print(f"\nper parameter set, the smallest ef_search reaching recall@10 >= {GOAL_RECALL}:")
    lines = []
    for p in results:
        point = p.first_reaching(GOAL_RECALL)
        if point is None:
            best = max(p.points, key=lambda q: q.short.mean(q.short.strict))
            lines.append(
                [p.m, p.ef_construction, f"{p.build_seconds:.1f}", f"{p.size / 2**20:.0f}"]
                + [f"none (best {best.short.mean(best.short.strict):.3f} at {best.ef})"]
                + ["-"] * 5
            )
            continue
        lines.append(
            [
                p.m,
                p.ef_construction,
                f"{p.build_seconds:.1f}",
                f"{p.size / 2**20:.0f}",
                point.ef,
                f"{point.short.mean(point.short.strict):.3f}",
                f"{point.paragraphs.mean(point.paragraphs.strict):.3f}",
                ms(percentile(point.short.seconds, 95)),
                p.search.ef_label if p.search else "-",
                ms(percentile(p.search.seconds, 95)) if p.search else "-",
                f"{p.search.recall.mean(p.search.recall.strict):.3f}" if p.search else "-",
            ]
        )
    print(
        table(
            [
                "m",
                "ef_construction",
                "build s",
                "index MiB",
                "ef_search",
                "recall@10 (short)",
                "(paragraphs)",
                "p95 ms",
                "search()'s ef_search",
                "search() p95 ms",
                "search() recall",
            ],
            lines,
        )
    )
    print(
        "(search(): retrieval.search.search(limit=10, reranker_top_n=10, hybrid=False) end to "
        f"end at that ef_search, in this process, {sizes.queries} short queries after {WARMUP} "
        "warm-up; its recall: of the chunks it returned)"
    )

    candidates = [
        (p, point)
        for p in results
        if (point := p.first_reaching(GOAL_RECALL)) is not None
        and percentile(point.short.seconds, 95) * 1000 < GOAL_VECTOR_P95_MS
    ]
    if not candidates:
        print(
            f"\nbest setting: none reaches recall@10 >= {GOAL_RECALL} with p95 < "
            f"{GOAL_VECTOR_P95_MS:g} ms"
        )
        return
    p, point = min(
        candidates, key=lambda c: (percentile(c[1].short.seconds, 95), c[0].build_seconds)
    )
    print(
        f"\nbest setting (recall@10 >= {GOAL_RECALL} at the smallest ef_search, lowest p95 "
        f"below {GOAL_VECTOR_P95_MS:g} ms): m={p.m}, ef_construction={p.ef_construction}, "
        f"ef_search={point.ef}: recall@10 {point.short.mean(point.short.strict):.3f} "
        f"(paragraphs {point.paragraphs.mean(point.paragraphs.strict):.3f}), p50 "
        f"{ms(percentile(point.short.seconds, 50))} ms, p95 "
        f"{ms(percentile(point.short.seconds, 95))} ms; build {p.build_seconds:.1f} s, "
        f"index {p.size / 2**20:.0f} MiB"
        + (f"; search() p95 {ms(percentile(p.search.seconds, 95))} ms" if p.search else "")
    )
    others = [
        f"m={q.m}/{q.ef_construction} at {pt.ef} (p95 {ms(percentile(pt.short.seconds, 95))} ms)"
        for q, pt in candidates
        if q is not p
    ]
    if others:
        print(f"  also meeting both goals: {', '.join(others)}")


# ---------------------------------------------------------------- main


def parse_params(text: str) -> list[tuple[int, int]]:
    result = []
    for item in text.split(","):
        m, _, ef_construction = item.strip().partition(":")
        result.append((int(m), int(ef_construction)))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10,000 chunks, 100 short queries and 20 paragraphs, m/ef_construction 16:64 "
        "and 32:64 unless --params says otherwise",
    )
    parser.add_argument(
        "--params",
        type=parse_params,
        default=None,
        help="m:ef_construction pairs, comma-separated (default: "
        + ",".join(f"{m}:{e}" for m, e in PARAMS)
        + ")",
    )
    args = parser.parse_args()
    sizes = (
        Sizes(documents=200, queries=100, paragraphs=20)
        if args.quick
        else Sizes(documents=2000, queries=200, paragraphs=50)
    )
    param_sets = args.params or (QUICK_PARAMS if args.quick else PARAMS)
    wall = time.perf_counter()
    print(machine(), flush=True)
    # The local embedder at 384 dimensions, whatever the environment says.
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_DIM"] = str(DIM)

    started = time.perf_counter()
    vocab, specs, rows = generate(sizes.documents)
    print(
        f"corpus: {len(specs)} documents x {CHUNKS_PER_DOCUMENT} chunks = {len(rows)} chunks, "
        f"{DIM} dimensions; generated and embedded in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    db = prepare("private")  # a throwaway server, stopped and deleted below
    try:
        environment_id, seconds = load(db, specs, rows)
        del rows
        print(f"loaded (COPY, VACUUM ANALYZE) in {seconds:.1f} s", flush=True)
        results = measure(db, environment_id, vocab, sizes, param_sets)
        report(results, sizes)
    finally:
        from django.db import connections

        connections.close_all()
        db.close()
        print(
            f"done in {time.perf_counter() - wall:.0f} s; the throwaway server stopped; {machine()}"
        )
    return 0


def measure(
    db: Database,
    environment_id: Any,
    vocab: Vocabulary,
    sizes: Sizes,
    param_sets: list[tuple[int, int]] | tuple[tuple[int, int], ...],
) -> list[ParamSet]:
    from retrieval.indexing import document_embedder

    embedder = document_embedder()
    items = [(query, embedder.embed([query.text])[0]) for query in queries(vocab, sizes.queries)]
    short = [vector for _, vector in items]
    paragraphs = embedder.embed(paragraph_texts(vocab, sizes.paragraphs))
    started = time.perf_counter()
    short_exact = exact_rankings(short)
    paragraphs_exact = exact_rankings(paragraphs)
    print(
        f"exact top-{TOP_K} of {len(short)} short queries (2-4 words of one topic, e.g. "
        f"{items[0][0].text!r}) and {len(paragraphs)} paragraphs, no vector index: "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    with db.connect(db.name) as conn:
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]
            for name in ("max_parallel_maintenance_workers", "shared_buffers")
        }
    print(
        f"index builds: {', '.join(f'{k} = {v}' for k, v in BUILD_SETTINGS.items())} in the "
        f"building session; server defaults "
        f"{', '.join(f'{k} = {v}' for k, v in settings.items())}"
    )
    print("\n  " + "  ".join(HEADERS), flush=True)
    results = []
    for m, ef_construction in param_sets:
        params = ParamSet(m, ef_construction)
        build_index(db, params)
        print(
            f"{params.label}: built in {params.build_seconds:.1f} s, {params.size / 2**20:.0f} MiB",
            flush=True,
        )
        for notice in params.notices:
            print(f"  server notice: {notice}")
        sweep(params, short, short_exact, paragraphs, paragraphs_exact)
        point = params.first_reaching(GOAL_RECALL)
        if point is not None:
            try:
                params.search = search_at(environment_id, items, short_exact, point.ef)
            except Exception as error:  # search() is not what is measured here
                params.search_error = f"{type(error).__name__}: {error}"
                print(f"  search() at ef_search {point.ef}: not measured ({params.search_error})")
            else:
                timing = params.search
                print(
                    f"  search() ({timing.how}): p50 {ms(percentile(timing.seconds, 50))} ms, "
                    f"p95 {ms(percentile(timing.seconds, 95))} ms, recall@10 of its results "
                    f"{timing.recall.mean(timing.recall.strict):.3f}; hnsw.ef_search it set: "
                    f"{timing.ef_label}"
                )
        print(f"  ({machine()})", flush=True)
        results.append(params)
    return results


if __name__ == "__main__":
    raise SystemExit(main())
