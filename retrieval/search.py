"""Search over an environment's chunks: vector, full text, or both fused (RRF, k = 60).

One SQL statement per search: the HxQL filter, both rankings, the fusion and the
adjacent chunks all run inside it. Before it, one aggregate over the documents counts the
chunks the filter leaves, which decides how the vector half runs (`vector_plan`).
Reranking and the score threshold happen after, in Python, on at most `limit` candidates.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F, Lookup, Q, QuerySet, Value
from pgvector.django import CosineDistance

from retrieval.models import TS_CONFIG, Chunk, Document, DocumentStatus
from retrieval.nodes import Neighbour, Node
from retrieval.rerank import rerank

RRF_K = 60
# pgvector's largest hnsw.ef_search.
EF_SEARCH_MAX = 1000
# How many more index candidates than `limit` the filter should leave, on average: the
# share of a filter is an average, and a query's neighbourhood may hold fewer of its chunks.
OVERFETCH = 3


class InArray(Lookup):
    """`document__in_array=documents.values("id")`, that is
    `document_id = ANY(ARRAY(SELECT id ...))`: the rows `__in` gives, but the planner sees
    one array of unknown length rather than a semi-join it sizes from column statistics.
    There are none for a metadata key, so an HxQL filter that keeps 1,758 documents is
    estimated at 3, and a semi-join sized at 3 documents runs the whole full-text index
    scan once per document (bench/retrieval_search.py)."""

    lookup_name = "in_array"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY(ARRAY{rhs})", (*lhs_params, *rhs_params)


Chunk._meta.get_field("document").register_lookup(InArray)


@dataclass(frozen=True)
class SearchRequest:
    query: str
    filter: Q = field(default_factory=Q)
    limit: int = 50
    hybrid: bool = True
    reranker_top_n: int = 13
    adjacent_range: int = 0
    adjacent_merge: bool = False
    threshold: float = 0.0


@dataclass(frozen=True)
class Scope:
    """Chunks the search may return (the environment's ready documents that pass the
    filter), and about how many the HNSW index holds (every environment's)."""

    chunks: int
    indexed: int


def search(*, environment_id: Any, request: SearchRequest, vector: list[float]) -> list[Node]:
    """The best chunks for `request` in the environment's ready documents, reranked."""
    found = candidates(environment_id=environment_id, request=request, vector=vector)
    return finish(request, found)


def finish(request: SearchRequest, found: list[Node]) -> list[Node]:
    """Rerank the candidates, apply the threshold, add the neighbours. No database: an
    async caller runs it outside its database thread (a reranker may call a model)."""
    ranked = rerank(request.query, distinct(found), top_n=request.reranker_top_n)
    kept = [n for n in ranked if n.score >= request.threshold]
    return with_neighbours(kept, request)


def distinct(found: list[Node]) -> list[Node]:
    """The candidates with each passage once: a chunk whose text an earlier (better fused)
    candidate has already is left out, so a document stored twice (uploaded before content
    hashes refused copies) neither takes two of the top N nor shows twice in the sources."""
    seen: set[str] = set()
    kept = []
    for node in found:
        text = " ".join(node.text.split())
        if text not in seen:
            seen.add(text)
            kept.append(node)
    return kept


def vector_plan(scope: Scope, limit: int) -> int | None:
    """The `hnsw.ef_search` for the vector half, or None to compare every chunk (exact).

    pgvector 0.6 filters after the HNSW scan, and the scan yields only `ef_search`
    candidates from the whole index: a filter that keeps a small share of them leaves
    fewer than `limit` (an environment next to a bigger one, a selective HxQL filter).
    So ef_search grows with 1 / share, and where it would pass pgvector's maximum, or the
    chunks are few enough to compare them all quickly, the search is exact instead.
    """
    if scope.chunks <= settings.RETRIEVAL_EXACT_MAX_CHUNKS:
        return None
    share = scope.chunks / max(scope.indexed, scope.chunks)
    wanted = limit if share >= 1 else math.ceil(limit * OVERFETCH / share)
    ef = max(settings.HNSW_EF_SEARCH, wanted)
    return ef if ef <= EF_SEARCH_MAX else None


def _documents(environment_id: Any, hxql: Q) -> QuerySet[Document]:
    return Document.objects.filter(hxql, environment_id=environment_id, status=DocumentStatus.READY)


def _scope(environment_id: Any, hxql: Q) -> Scope:
    """The chunks the filter leaves, summed over its documents (a row per document, not
    per chunk): exact where the planner's estimate of a metadata filter can be off by a
    hundred times. The index's size is PostgreSQL's estimate (`reltuples`), which costs
    nothing whatever the number of documents; when it lags behind a bulk load the share
    comes out high, ef_search low, and a page the index cannot fill runs again exactly."""
    searched = _documents(environment_id, hxql).order_by().values("chunk_count")
    sql, params = searched.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(SUM(chunk_count), 0),"
            " (SELECT reltuples FROM pg_class WHERE oid = 'retrieval_chunk'::regclass)"
            f" FROM ({sql}) AS searched",
            params,
        )
        chunks, estimated = cursor.fetchone()
    chunks = int(chunks)
    return Scope(chunks=chunks, indexed=max(chunks, int(estimated or 0)))


def candidates(*, environment_id: Any, request: SearchRequest, vector: list[float]) -> list[Node]:
    """Up to `limit` chunks by fused rank, each with its neighbours' texts."""
    scope = _scope(environment_id, request.filter)
    ef = vector_plan(scope, request.limit)
    rows, vector_hits = _run(environment_id, request, vector, ef)
    if ef is not None and vector_hits < min(request.limit, scope.chunks):
        # The index's nearest candidates were mostly chunks the filter drops (another
        # environment's, say, all nearer the query): compare every chunk instead.
        rows, vector_hits = _run(environment_id, request, vector, None)
    return [_node(row) for row in rows]


def _run(
    environment_id: Any, request: SearchRequest, vector: list[float], ef: int | None
) -> tuple[list[tuple[Any, ...]], int]:
    """The fused rows, and how many chunks the vector half found."""
    documents = _documents(environment_id, request.filter)
    parts = [_vector_ranking(documents, vector, request.limit, ef)]
    text_query = SearchQuery(request.query, search_type="websearch", config=TS_CONFIG)
    if request.hybrid:
        by_text = (
            Chunk.objects.filter(
                document__in_array=documents.values("id"), search_vector=text_query
            )
            .annotate(relevance=SearchRank(F("search_vector"), text_query, cover_density=True))
            .order_by("-relevance", "id")
            .values("id", "relevance")[: request.limit]
        )
        parts.append(_ranked(by_text, "relevance DESC"))
    sql, params = _fused(parts, request)
    with transaction.atomic(), connection.cursor() as cursor:
        if ef is not None:
            cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # Every row carries the vector half's count last; no row means it found nothing.
    return [row[:-1] for row in rows], (rows[0][-1] if rows else 0)


# The SQL here is assembled from constant fragments and querysets Django compiled with
# placeholders; every value (the query, the vector, the HxQL literals) is a parameter.
Part = tuple[str, tuple[Any, ...]]


def _vector_ranking(
    documents: QuerySet[Document], vector: list[float], limit: int, ef: int | None
) -> Part:
    """The chunks of `documents` nearest `vector`: exact when `ef` is None, otherwise the
    HNSW index's `ef` nearest chunks of any environment, filtered after the scan."""
    distance = CosineDistance("embedding", vector)
    if ef is None:
        exact = (
            Chunk.objects.filter(document__in_array=documents.values("id"))
            .annotate(distance=distance)
            # `+ 0`: an order the HNSW index cannot serve, so every chunk is compared
            # whatever the planner thinks the filter leaves.
            .order_by(F("distance") + Value(0.0), "id")
            .values("id", "distance")[:limit]
        )
        return _ranked(exact, "distance")
    nearest = Chunk.objects.annotate(distance=distance).order_by("distance")
    nearest_sql, nearest_params = nearest.values("id", "document_id", "distance")[
        :ef
    ].query.sql_with_params()
    documents_sql, documents_params = documents.values("id").query.sql_with_params()
    # The filter stays outside the LIMIT: this is the plan pgvector 0.6 can do fast, made
    # explicit so that a misestimated filter cannot turn it into an exact scan.
    ranking = (
        f"SELECT id, distance FROM ({nearest_sql}) AS nearest"
        f" WHERE document_id IN ({documents_sql}) ORDER BY distance, id LIMIT %s"
    )
    return _ranked_sql(ranking, (*nearest_params, *documents_params, limit), "distance")


def _ranked(queryset: QuerySet[Any], order: str) -> Part:
    """A ranking as (id, rank): `order` is a column of the queryset, maybe with DESC."""
    sql, params = queryset.query.sql_with_params()
    return _ranked_sql(sql, tuple(params), order)


def _ranked_sql(sql: str, params: tuple[Any, ...], order: str) -> Part:
    return (
        f"SELECT id, ROW_NUMBER() OVER (ORDER BY {order}, id) AS rank FROM ({sql}) AS r",
        params,
    )


def _fused(parts: list[Part], request: SearchRequest) -> tuple[str, list[Any]]:
    """The statement: the rankings (the vector's first, as `half` 0), fused, with each
    chunk's document, its neighbours, and the count of the vector half's hits."""
    union = " UNION ALL ".join(
        f"(SELECT id, rank, {half} AS half FROM ({sql}) AS ranking)"
        for half, (sql, _) in enumerate(parts)
    )
    params: list[Any] = [p for _, ps in parts for p in ps]
    neighbours = "'[]'::json"
    if request.adjacent_range:
        neighbours = (
            "COALESCE((SELECT json_agg(json_build_object('id', n.id, 'position', n.position,"
            " 'text', n.text, 'start', n.start, 'end', n.end) ORDER BY n.position)"
            " FROM retrieval_chunk n WHERE n.document_id = c.document_id AND n.id <> c.id"
            " AND n.position BETWEEN c.position - %s AND c.position + %s), '[]'::json)"
        )
    sql = (
        f"WITH hits AS ({union}),"
        f" fused AS (SELECT id, SUM(1.0 / ({RRF_K} + rank)) AS score FROM hits GROUP BY id)"
        " SELECT c.id, c.document_id, d.title, c.position, c.text, f.score, d.metadata,"
        f" c.start, c.end, {neighbours},"
        " (SELECT count(*) FROM hits WHERE half = 0)"
        " FROM fused f JOIN retrieval_chunk c ON c.id = f.id"
        " JOIN retrieval_document d ON d.id = c.document_id"
        " ORDER BY f.score DESC, c.id LIMIT %s"
    )
    if request.adjacent_range:
        params += [request.adjacent_range, request.adjacent_range]
    params.append(request.limit)
    return sql, params


def _node(row: tuple[Any, ...]) -> Node:
    chunk_id, document_id, title, position, text, score, metadata, start, end, neighbours = row
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    if isinstance(neighbours, str):
        neighbours = json.loads(neighbours)
    return Node(
        chunk_id=chunk_id,
        document_id=document_id,
        title=title,
        position=position,
        text=text,
        score=float(score),
        neighbours=tuple(
            Neighbour(n["id"], n["position"], n["text"], n["start"], n["end"])
            for n in neighbours or ()
        ),
        metadata=metadata or {},
        start=start,
        end=end,
    )


def with_neighbours(hits: list[Node], request: SearchRequest) -> list[Node]:
    """Each hit with its adjacent chunks: merged into its text (`adjacent_merge`), or else
    as nodes of their own right after it, with its score, each chunk listed once."""
    if not request.adjacent_range:
        return hits
    if request.adjacent_merge:
        return [_merged(hit) for hit in hits]
    listed = {hit.chunk_id for hit in hits}
    nodes: list[Node] = []
    for hit in hits:
        nodes.append(hit)
        for n in hit.neighbours:
            if n.chunk_id not in listed:
                listed.add(n.chunk_id)
                nodes.append(_neighbour_node(hit, n))
    return nodes


def _neighbour_node(hit: Node, neighbour: Neighbour) -> Node:
    return Node(
        chunk_id=neighbour.chunk_id,
        document_id=hit.document_id,
        title=hit.title,
        position=neighbour.position,
        text=neighbour.text,
        score=hit.score,
        metadata=hit.metadata,
        start=neighbour.start,
        end=neighbour.end,
    )


def _merged(hit: Node) -> Node:
    if not hit.neighbours:
        return hit
    spans = sorted(
        [*hit.neighbours, Neighbour(hit.chunk_id, hit.position, hit.text, hit.start, hit.end)],
        key=lambda n: n.position,
    )
    return Node(
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        title=hit.title,
        position=hit.position,
        text=merge_spans(spans),
        score=hit.score,
        metadata=hit.metadata,
        start=spans[0].start,
        end=max(n.end for n in spans),
    )


def merge_spans(spans: list[Neighbour]) -> str:
    """The text of consecutive chunks, in position order, by their offsets in the document:
    what two chunks share (the overlap) appears once; between two that do not touch, the
    whitespace the chunker trimmed becomes one space."""
    if not spans:
        return ""
    merged, reached = spans[0].text, spans[0].end
    for span in spans[1:]:
        if span.start >= reached:
            merged += (" " if span.start > reached else "") + span.text
        elif span.end > reached:
            merged += span.text[reached - span.start :]
        reached = max(reached, span.end)
    return merged
