"""Embeddings from any OpenAI-compatible server (OpenAI, vLLM, Ollama, LiteLLM, gateways).

`OPENAI_BASE_URL` and `OPENAI_API_KEY` come from the Django settings or the environment,
as for the chat provider. Retries (429, 5xx, timeouts, lost connections) are the SDK's own.
"""

from __future__ import annotations

import functools

import openai

from agentbuilder.openai_profile import openai_profile
from retrieval.embedders.base import EmbeddingError

MODEL = "text-embedding-3-small"


class OpenAIEmbedder:
    """`model` (default text-embedding-3-small) asked for `dimension` floats, `batch_size`
    texts a request. Raises ValueError for a dimension or batch size below 1."""

    def __init__(
        self,
        *,
        dimension: int,
        model: str | None = None,
        batch_size: int = 64,
        max_retries: int = 3,
        timeout: float = 30.0,
    ) -> None:
        if dimension < 1 or batch_size < 1:
            raise ValueError("the embedding dimension and batch size must be at least 1")
        self.dimension = dimension
        self.model = model or MODEL
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = timeout

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        base_url, api_key = openai_profile()
        try:
            client = _client(base_url, api_key, self.max_retries, self.timeout)
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"OpenAI client not configured: {exc}") from exc
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._batch(client, texts[start : start + self.batch_size]))
        return vectors

    def _batch(self, client: openai.OpenAI, batch: list[str]) -> list[list[float]]:
        try:
            response = client.embeddings.create(
                model=self.model,
                input=batch,
                dimensions=self.dimension,
                # Every compatible server speaks floats; not all decode base64.
                encoding_format="float",
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(_message(exc, self.model)) from exc
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(batch))):
            raise EmbeddingError(
                f"The OpenAI-compatible server answered {len(data)} embeddings "
                f"for {len(batch)} texts"
            )
        for item in data:
            if len(item.embedding) != self.dimension:
                raise EmbeddingError(
                    f"The OpenAI-compatible server answered {len(item.embedding)} floats from "
                    f"{self.model}, not {self.dimension}: does the model take `dimensions`?"
                )
        return [list(item.embedding) for item in data]


@functools.lru_cache(maxsize=16)
def _client(
    base_url: str | None, api_key: str | None, max_retries: int, timeout: float
) -> openai.OpenAI:
    # The sync client (and its connection pool) is thread-safe: one per profile serves all.
    return openai.OpenAI(
        base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout
    )


def _message(exc: openai.OpenAIError, model: str) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return f"The OpenAI-compatible server did not answer in time ({model})"
    if isinstance(exc, openai.APIStatusError):
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else None
        detail = body.get("message") if isinstance(body, dict) else None
        return (
            f"The OpenAI-compatible server refused to embed with {model} "
            f"(HTTP {exc.status_code}): {detail or exc.message}"
        )
    if isinstance(exc, openai.APIConnectionError):
        return f"The OpenAI-compatible server could not be reached: {exc}"
    return f"The OpenAI-compatible server failed to embed with {model}: {exc}"
