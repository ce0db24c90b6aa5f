"""Why a search could not run: a provider behind it (embedding, reranking) failed."""

from __future__ import annotations

from agentbuilder.errors import DomainError


class RetrievalUnavailable(DomainError):
    """A retrieval provider failed after its retries, or answered something unusable.

    A DomainError so that every route that searches answers it as docs/api.md#errors answers
    any upstream model's failure, a 502 naming the cause, without catching it itself.
    """

    status = 502


class RerankError(RetrievalUnavailable):
    """The reranking provider failed after its retries, or answered something unusable."""
