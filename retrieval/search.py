"""Search over an environment's chunks: vector, full text, or both fused (RRF, k = 60).

One SQL statement per search: the HxQL filter, both rankings, the fusion and the
adjacent chunks all run inside it. Reranking and the score threshold happen after, in
Python, on at most `limit` candidates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from pgvector.django import CosineDistance

from retrieval.models import TS_CONFIG, Chunk, Document, DocumentStatus
from retrieval.nodes import Neighbour, Node
from retrieval.rerank import rerank

RRF_K = 60


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


def search(*, environment_id: Any, request: SearchRequest, vector: list[float]) -> list[Node]:
    """The best chunks for `request` in the environment's ready documents, reranked."""
    candidates = _candidates(environment_id, request, vector)
    ranked = rerank(request.query, candidates, top_n=request.reranker_top_n)
    kept = [n for n in ranked if n.score >= request.threshold]
    return [_with_neighbours(n, request) for n in kept]


def _documents(environment_id: Any, hxql: Q) -> QuerySet[Document]:
    return Document.objects.filter(hxql, environment_id=environment_id, status=DocumentStatus.READY)


def _candidates(environment_id: Any, request: SearchRequest, vector: list[float]) -> list[Node]:
    chunks = Chunk.objects.filter(document__in=_documents(environment_id, request.filter))
    by_vector = (
        chunks.annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values("id", "distance")[: request.limit]
    )
    parts = [_ranked(by_vector, "distance")]
    text_query = SearchQuery(request.query, search_type="websearch", config=TS_CONFIG)
    if request.hybrid:
        by_text = (
            chunks.filter(search_vector=text_query)
            .annotate(relevance=SearchRank(F("search_vector"), text_query, cover_density=True))
            .order_by("-relevance", "id")
            .values("id", "relevance")[: request.limit]
        )
        parts.append(_ranked(by_text, "relevance DESC"))
    sql, params = _fused(parts, request)
    with transaction.atomic(), connection.cursor() as cursor:
        # ef_search bounds how many neighbours HNSW visits: enough for `limit` after filtering.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(_ef(request))])
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_node(row) for row in rows]


def _ef(request: SearchRequest) -> int:
    return min(1000, max(40, request.limit * 4))


# The SQL here is assembled from constant fragments and querysets Django compiled with
# placeholders; every value (the query, the vector, the HxQL literals) is a parameter.
Part = tuple[str, tuple[Any, ...]]


def _ranked(queryset: QuerySet[Any], order: str) -> Part:
    """A ranking as (id, rank): `order` is a column of the queryset, maybe with DESC."""
    sql, params = queryset.query.sql_with_params()
    return (
        f"SELECT id, ROW_NUMBER() OVER (ORDER BY {order}, id) AS rank FROM ({sql}) AS r",
        tuple(params),
    )


def _fused(
    parts: list[tuple[str, tuple[Any, ...]]], request: SearchRequest
) -> tuple[str, list[Any]]:
    union = " UNION ALL ".join(f"({sql})" for sql, _ in parts)
    params: list[Any] = [p for _, ps in parts for p in ps]
    neighbours = "'[]'::json"
    if request.adjacent_range:
        neighbours = (
            "COALESCE((SELECT json_agg(json_build_object('id', n.id, 'position', n.position,"
            " 'text', n.text) ORDER BY n.position) FROM retrieval_chunk n"
            " WHERE n.document_id = c.document_id AND n.id <> c.id"
            " AND n.position BETWEEN c.position - %s AND c.position + %s), '[]'::json)"
        )
    sql = (
        f"WITH hits AS ({union}),"
        f" fused AS (SELECT id, SUM(1.0 / ({RRF_K} + rank)) AS score FROM hits GROUP BY id)"
        f" SELECT c.id, c.document_id, d.title, c.position, c.text, f.score, d.metadata,"
        f" {neighbours}"
        " FROM fused f JOIN retrieval_chunk c ON c.id = f.id"
        " JOIN retrieval_document d ON d.id = c.document_id"
        " ORDER BY f.score DESC, c.id LIMIT %s"
    )
    if request.adjacent_range:
        params += [request.adjacent_range, request.adjacent_range]
    params.append(request.limit)
    return sql, params


def _node(row: tuple[Any, ...]) -> Node:
    chunk_id, document_id, title, position, text, score, metadata, neighbours = row
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
        neighbours=tuple(Neighbour(n["id"], n["position"], n["text"]) for n in neighbours or ()),
        metadata=metadata or {},
    )


def _with_neighbours(node: Node, request: SearchRequest) -> Node:
    if not node.neighbours or not request.adjacent_merge:
        return node
    ordered = sorted(
        [*node.neighbours, Neighbour(node.chunk_id, node.position, node.text)],
        key=lambda n: n.position,
    )
    return Node(
        chunk_id=node.chunk_id,
        document_id=node.document_id,
        title=node.title,
        position=node.position,
        text=merge_texts([n.text for n in ordered]),
        score=node.score,
        metadata=node.metadata,
    )


def merge_texts(texts: list[str]) -> str:
    """Join consecutive chunks, dropping the overlap each one repeats from the one before."""
    merged = texts[0] if texts else ""
    for text in texts[1:]:
        merged += _without_overlap(merged, text)
    return merged


def _without_overlap(before: str, after: str) -> str:
    for size in range(min(len(before), len(after)), 0, -1):
        if before.endswith(after[:size]):
            return after[size:]
    return ("" if before.endswith((" ", "\n")) or not before else " ") + after
