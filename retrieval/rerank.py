"""Reranking search's candidates to the top N, by the deployment's RERANK_PROVIDER.

`local` (the default) is a cross-feature score in 0..1: how well a chunk covers the
query's terms (0.7) and how close together the found terms stand, times that coverage
(0.3), the fused retrieval score only breaking ties: 1 for every term side by side. It
is lexical and cheap, which is what a deployment with no reranking model can honestly
offer. `bedrock` asks a reranking model (retrieval.rerank_bedrock).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Protocol, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agentbuilder.plugins import Registry

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    """a an and are as at be by for from how i in is it of on or our the to was what when
    where which who why with you your do does can""".split()  # noqa: SIM905
)


class Scored(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def score(self) -> float: ...


S = TypeVar("S", bound=Scored)


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


class Reranker(Protocol):
    def __call__(self, query: str, nodes: list[S], *, top_n: int) -> list[S]:
        """The `top_n` best of `nodes` for `query`, best first, each scored by the reranker."""
        ...


class RerankerFactory(Protocol):
    def __call__(self, *, model: str | None, max_retries: int, timeout: float) -> Reranker: ...


# By dotted path, so boto3 loads only where reranking runs on Bedrock.
RERANKERS: Registry[RerankerFactory] = Registry(
    "reranker",
    {
        "local": "retrieval.rerank.local_reranker",
        "bedrock": "retrieval.rerank_bedrock.BedrockReranker",
    },
    packages={"bedrock": "boto3"},
    error=ImproperlyConfigured,
    unknown="RERANK_PROVIDER is {name!r}; it must be 'local' or 'bedrock'",
    missing="RERANK_PROVIDER {name!r} needs the '{package}' package: {error}",
)


def rerank(query: str, nodes: list[S], *, top_n: int) -> list[S]:
    """The `top_n` best nodes by the deployment's reranker, whose score becomes theirs.

    Raises RerankError when a reranking model fails, ImproperlyConfigured for an unknown
    RERANK_PROVIDER.
    """
    return reranker()(query, nodes, top_n=top_n)


def reranker() -> Reranker:
    """The reranker RERANK_PROVIDER names, read on every search so settings apply at once."""
    build = RERANKERS.lookup(settings.RERANK_PROVIDER)
    return build(
        model=settings.RERANK_MODEL,
        max_retries=settings.RERANK_MAX_RETRIES,
        timeout=settings.RERANK_TIMEOUT,
    )


def rerank_local(query: str, nodes: list[S], *, top_n: int) -> list[S]:
    """The `top_n` best nodes by the cross-feature score, which becomes their score."""
    wanted = set(terms(query))
    if not wanted:
        return nodes[:top_n]
    rescored = [
        dataclasses.replace(node, score=_score(wanted, node.text, node.score))  # type: ignore[type-var]
        for node in nodes
    ]
    rescored.sort(key=lambda n: n.score, reverse=True)
    return rescored[:top_n]


def local_reranker(*, model: str | None, max_retries: int, timeout: float) -> Reranker:
    """The cross-feature reranker: lexical, so it has no model to name, call or wait for."""
    return rerank_local


def _score(wanted: set[str], text: str, fused: float) -> float:
    words = terms(text)
    positions = [i for i, w in enumerate(words) if w in wanted]
    found = {words[i] for i in positions}
    coverage = len(found) / len(wanted)
    # Weighted by coverage: one term of two "stands side by side" with nobody, which says
    # nothing, so a chunk matching half the query scores half (0.5), not 0.65.
    proximity = coverage * _proximity(words, positions, found) if found else 0.0
    # The fused rank (≤ 2/61) only separates otherwise equal chunks.
    return min(1.0, 0.7 * coverage + 0.3 * proximity + fused * 0.01)


def _proximity(words: list[str], positions: list[int], found: set[str]) -> float:
    """1 when the found terms stand side by side, falling as the shortest span that holds
    all of them grows."""
    best = len(words)
    counts: dict[str, int] = {}
    left = 0
    for right in positions:
        counts[words[right]] = counts.get(words[right], 0) + 1
        while len(counts) == len(found):
            best = min(best, right - positions[left] + 1)
            term = words[positions[left]]
            counts[term] -= 1
            if not counts[term]:
                del counts[term]
            left += 1
    return len(found) / best if best else 0.0
