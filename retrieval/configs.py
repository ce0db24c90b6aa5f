"""A RAG config's retrieval settings (docs/api.md#configs): what a RAG agent's config, a
RAG tool and POST /v1/search share. The agents app's configs embed them."""

from __future__ import annotations

from pydantic import Field

from agentbuilder.wire import CamelModel


class RagSettings(CamelModel):
    hxql_query: str = Field("SELECT * FROM SysContent", min_length=1, max_length=10_000)
    limit: int = Field(50, ge=1, le=1000)
    hybrid_search: bool = True
    adjacent_chunk_range: int = Field(0, ge=0, le=10)
    adjacent_chunk_merge: bool = False
    reranker_top_n: int = Field(13, ge=1, le=100)
    enable_hallucination_check: bool = False
    enable_multihop_query_refinement: bool = False
    # Left out of the stored form when not set: the deployment's RAG_SCORE_THRESHOLD applies
    # (docs/architecture.md#decisions).
    min_score: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Reranked passages scoring below this (0..1) are left out of the prompt "
        "and the sources. Unset: the deployment's RAG_SCORE_THRESHOLD (0.1 unless changed, "
        "measured on the sample documents).",
    )
