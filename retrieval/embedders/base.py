"""What every embedding provider offers: texts in, vectors of one fixed size out."""

from __future__ import annotations

from typing import Protocol

from retrieval.errors import RetrievalUnavailable


class Embedder(Protocol):
    """Turns texts into vectors of `dimension` floats, one per text, in the input's order.

    Synchronous: ingestion runs in Celery workers; async callers use `asyncio.to_thread`.
    """

    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """The vectors of `texts`; raises EmbeddingError when the provider fails."""
        ...


class EmbeddingError(RetrievalUnavailable):
    """A provider failed after its retries, or answered something unusable."""
