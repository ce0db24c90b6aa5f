"""Amazon Titan Text Embeddings v2 on Bedrock, through boto3's `bedrock-runtime` InvokeModel.

Titan v2 embeds one text per call, so the calls of a batch run concurrently on a few
threads; retries (throttling, 5xx, lost connections) are botocore's own, from the client
factory. Region and credentials come from the usual AWS settings (see agentbuilder.aws).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentbuilder import aws
from retrieval.embedders.base import EmbeddingError

MODEL = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (256, 512, 1024)
# Calls in flight per batch: enough to hide the latency of one call, few enough to stay
# under a default account's throttling quota.
CONCURRENCY = 8


class BedrockEmbedder:
    """Titan v2 embeddings, normalised, of `dimension` 256, 512 or 1024 (ValueError otherwise).

    `model` may name another model that takes Titan v2's request body (an inference
    profile, a provisioned throughput ARN); `batch_size` bounds the calls in flight
    (to at most 8).
    """

    def __init__(
        self,
        *,
        dimension: int,
        model: str | None = None,
        batch_size: int = 64,
        max_retries: int = 3,
        timeout: float = 30.0,
    ) -> None:
        if dimension not in DIMENSIONS:
            allowed = ", ".join(map(str, DIMENSIONS))
            raise ValueError(
                f"Titan text embeddings v2 support dimensions {allowed}, not {dimension}"
            )
        self.dimension = dimension
        self.model = model or MODEL
        self.workers = max(1, min(CONCURRENCY, batch_size))
        self.max_retries = max_retries
        self.timeout = timeout

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            client = aws.client(
                "bedrock-runtime", max_retries=self.max_retries, timeout=self.timeout
            )
        except BotoCoreError as exc:  # no region, a broken profile …
            raise EmbeddingError(f"Bedrock is not configured: {exc}") from exc
        if len(texts) == 1:
            return [self._one(client, texts[0])]
        with ThreadPoolExecutor(min(self.workers, len(texts)), "titan-embed") as pool:
            futures = [pool.submit(self._one, client, text) for text in texts]
            try:
                return [future.result() for future in futures]
            finally:
                # After a failure the batch is lost: calls not yet started are pointless.
                pool.shutdown(cancel_futures=True)

    def _one(self, client: Any, text: str) -> list[float]:
        body = {"inputText": text, "dimensions": self.dimension, "normalize": True}
        try:
            response = client.invoke_model(
                modelId=self.model,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            document = json.loads(response["body"].read())
        except ClientError as exc:
            raise EmbeddingError(
                f"Bedrock refused to embed with {self.model}: {aws.client_error_text(exc)}"
            ) from exc
        except (BotoCoreError, ValueError) as exc:
            raise EmbeddingError(f"Bedrock failed to embed with {self.model}: {exc}") from exc
        return self._vector(document)

    def _vector(self, document: Any) -> list[float]:
        vector = document.get("embedding") if isinstance(document, dict) else None
        if isinstance(vector, list) and len(vector) == self.dimension:
            try:
                return [float(value) for value in vector]
            except (TypeError, ValueError):
                pass
        size = len(vector) if isinstance(vector, list) else "no"
        raise EmbeddingError(
            f"Bedrock answered {size} numbers from {self.model}, not {self.dimension} floats"
        )
