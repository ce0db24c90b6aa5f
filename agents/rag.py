"""Retrieval as a run uses it: a RAG config's search (retrieval.rag) turned into a retriever
for the runtime, bound to one environment."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from agentbuilder.db import in_db
from agents.runtime.failures import FailureCode
from agents.runtime.spec import Retriever, RunFailure
from retrieval.configs import RagSettings
from retrieval.errors import RetrievalUnavailable
from retrieval.indexing import document_embedder
from retrieval.nodes import Node
from retrieval.rag import search_request, settings_merged
from retrieval.search import candidates, finish


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

    return Retriever(retrieve, hxql_query=settings_merged(rag, overrides).hxql_query)
