"""Retrieval as agents use it: RAG settings (config ∪ request overrides) turned into a
retriever bound to one environment, for the runtime and for POST /v1/search."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from django.conf import settings

from agentbuilder.db import in_db
from agentbuilder.errors import Invalid
from agents.configs import RagSettings
from agents.runtime.failures import FailureCode
from agents.runtime.spec import Retriever, RunFailure
from retrieval.errors import RetrievalUnavailable
from retrieval.hxql import HxqlError, parse_hxql
from retrieval.indexing import document_embedder
from retrieval.nodes import Node
from retrieval.search import SearchRequest, candidates, finish, search

# RAG settings a request may override (docs/api.md#invocation), as the request names them.
OVERRIDES = (
    "hxql_query",
    "hybrid_search",
    "limit",
    "reranker_top_n",
    "adjacent_chunk_range",
    "adjacent_chunk_merge",
)


def _merged(rag: RagSettings, overrides: dict[str, Any] | None) -> RagSettings:
    given = {k: v for k, v in (overrides or {}).items() if k in OVERRIDES and v is not None}
    return rag.model_copy(update=given)


def search_request(rag: RagSettings, overrides: dict[str, Any] | None = None) -> SearchRequest:
    """The search a RAG config asks for, with a request's overrides; raises Invalid for a
    bad HxQL query (a config's was checked when it was saved, so it is the request's)."""
    merged = _merged(rag, overrides)
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
        threshold=settings.RAG_SCORE_THRESHOLD,
    )


def search_now(*, environment_id: Any, template: SearchRequest, query: str) -> list[Node]:
    """Embed the query and search, here and now (sync: the search API, the admin)."""
    [vector] = document_embedder().embed([query])
    request = dataclasses.replace(template, query=query)
    return search(environment_id=environment_id, request=request, vector=vector)


def retriever(
    *, environment_id: Any, rag: RagSettings, overrides: dict[str, Any] | None = None
) -> Retriever:
    """An async retriever for the runtime: embedding and reranking in threads, the query
    in the request's database thread, no connection held in between. Raises Invalid (bad
    HxQL)."""
    template = search_request(rag, overrides)
    embedder = document_embedder()

    async def retrieve(query: str) -> list[Node]:
        try:
            [vector] = await asyncio.to_thread(embedder.embed, [query])
            request = dataclasses.replace(template, query=query)
            found = await in_db(candidates)(
                environment_id=environment_id, request=request, vector=vector
            )
            return await asyncio.to_thread(finish, request, found)
        except RetrievalUnavailable as exc:
            # An outage, not a bug: the run fails saying which provider failed, and why.
            raise RunFailure(FailureCode.RETRIEVAL_UNAVAILABLE, str(exc)) from exc

    return Retriever(retrieve, hxql_query=_merged(rag, overrides).hxql_query)
