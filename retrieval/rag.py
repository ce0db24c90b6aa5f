"""Retrieval as a RAG config asks for it: its settings (config ∪ a request's overrides)
turned into a search request, and a search run here and now (POST /v1/search, the admin's
"Try retrieval"). A run's retriever is built from the same request (agents.rag)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.conf import settings

from agentbuilder.errors import Invalid
from retrieval.configs import RagSettings
from retrieval.hxql import HxqlError, parse_hxql
from retrieval.indexing import document_embedder
from retrieval.nodes import Node
from retrieval.search import SearchRequest, search

# RAG settings a request may override (docs/api.md#invocation), as the request names them.
OVERRIDES = (
    "hxql_query",
    "hybrid_search",
    "limit",
    "reranker_top_n",
    "adjacent_chunk_range",
    "adjacent_chunk_merge",
)


def settings_merged(rag: RagSettings, overrides: dict[str, Any] | None) -> RagSettings:
    """`rag` with a request's overrides (those of OVERRIDES it gives) in place."""
    given = {k: v for k, v in (overrides or {}).items() if k in OVERRIDES and v is not None}
    return rag.model_copy(update=given)


def search_request(rag: RagSettings, overrides: dict[str, Any] | None = None) -> SearchRequest:
    """The search a RAG config asks for, with a request's overrides; raises Invalid for a
    bad HxQL query (a config's was checked when it was saved, so it is the request's)."""
    merged = settings_merged(rag, overrides)
    try:
        hxql = parse_hxql(merged.hxql_query)
    except HxqlError as exc:
        raise Invalid.at(("body", "hxqlQuery"), str(exc)) from None
    return SearchRequest(
        query="",
        filter=hxql,
        limit=merged.limit,
        hybrid=merged.hybrid_search,
        reranker_top_n=merged.reranker_top_n,
        adjacent_range=merged.adjacent_chunk_range,
        adjacent_merge=merged.adjacent_chunk_merge,
        threshold=settings.RAG_SCORE_THRESHOLD if merged.min_score is None else merged.min_score,
    )


def search_now(*, environment_id: Any, template: SearchRequest, query: str) -> list[Node]:
    """Embed the query and search, here and now (sync: the search API, the admin)."""
    [vector] = document_embedder().embed([query])
    request = dataclasses.replace(template, query=query)
    return search(environment_id=environment_id, request=request, vector=vector)
