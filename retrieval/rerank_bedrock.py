"""Reranking on Bedrock, through boto3's `bedrock-agent-runtime` Rerank.

One call per search: the query and every candidate's text go out, the best
`numberOfResults` come back as (index, relevanceScore), best first. Retries (throttling,
5xx, lost connections) are botocore's own, from the client factory; region and
credentials come from the usual AWS settings (see agentbuilder.aws).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentbuilder import aws
from retrieval.errors import RerankError
from retrieval.rerank import S

MODEL = "amazon.rerank-v1:0"
MAX_SOURCES = 1000  # the API's limit on sources per call


class BedrockReranker:
    """Bedrock's reranking model `model`: a model id (amazon.rerank-v1:0 by default,
    cohere.rerank-v3-5:0 …), made a foundation-model ARN in the client's region, or a full
    ARN, sent as it is."""

    def __init__(
        self, *, model: str | None = None, max_retries: int = 2, timeout: float = 30.0
    ) -> None:
        self.model = model or MODEL
        self.max_retries = max_retries
        self.timeout = timeout

    def __call__(self, query: str, nodes: list[S], *, top_n: int) -> list[S]:
        # Search hands its candidates over ranked by the fused score: past the API's limit,
        # the tail it leaves out is the least likely to belong in the top N.
        candidates = nodes[:MAX_SOURCES]
        if not candidates or top_n < 1:
            return []
        if not query.strip():  # nothing to rank against, and the API refuses an empty query
            return candidates[:top_n]
        try:
            client = aws.client(
                "bedrock-agent-runtime", max_retries=self.max_retries, timeout=self.timeout
            )
        except BotoCoreError as exc:  # no region, a broken profile …
            raise RerankError(f"Bedrock is not configured: {exc}") from exc
        answer = self._call(client, query, [n.text for n in candidates], top_n)
        return [
            dataclasses.replace(candidates[index], score=score)  # type: ignore[type-var]
            for index, score in self._results(answer, len(candidates))[:top_n]
        ]

    def model_arn(self, client: Any) -> str:
        if self.model.startswith("arn:"):
            return self.model
        meta = client.meta
        return f"arn:{meta.partition}:bedrock:{meta.region_name}::foundation-model/{self.model}"

    def _call(self, client: Any, query: str, texts: list[str], top_n: int) -> Any:
        try:
            return client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query}}],
                sources=[
                    {
                        "type": "INLINE",
                        "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}},
                    }
                    for text in texts
                ],
                rerankingConfiguration={
                    "type": "BEDROCK_RERANKING_MODEL",
                    "bedrockRerankingConfiguration": {
                        "numberOfResults": min(top_n, len(texts)),
                        "modelConfiguration": {"modelArn": self.model_arn(client)},
                    },
                },
            )
        except ClientError as exc:
            raise RerankError(
                f"Bedrock refused to rerank with {self.model}: {aws.client_error_text(exc)}"
            ) from exc
        except BotoCoreError as exc:
            raise RerankError(f"Bedrock failed to rerank with {self.model}: {exc}") from exc
        except (AttributeError, TypeError, ValueError) as exc:
            # botocore's parser fails with the built-in errors on a body of the wrong shape.
            raise RerankError(self._malformed(exc)) from exc

    def _results(self, answer: Any, count: int) -> list[tuple[int, float]]:
        """(candidate index, relevance score) pairs in Bedrock's order; RerankError unless
        each names a distinct candidate and carries a number."""
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise RerankError(self._malformed("no results"))
        scores: dict[int, float] = {}  # insertion-ordered: Bedrock's order, best first
        for result in results:
            index = result.get("index") if isinstance(result, dict) else None
            score = result.get("relevanceScore") if isinstance(result, dict) else None
            if (
                not isinstance(index, int)
                or not 0 <= index < count
                or index in scores
                or not isinstance(score, int | float)
            ):
                raise RerankError(self._malformed(repr(result)))
            scores[index] = float(score)
        return list(scores.items())

    def _malformed(self, what: object) -> str:
        return f"Bedrock answered a malformed ranking from {self.model}: {what}"
