"""The local reranker: how well a chunk covers the query's terms, and how close together.

A cross-feature score in 0..1 (coverage 0.7, proximity 0.3); the fused retrieval score
only breaks ties. It is lexical and cheap, which is what a deployment with no reranking
model can honestly offer.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Protocol, TypeVar

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


def rerank(query: str, nodes: list[S], *, top_n: int) -> list[S]:
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


def _score(wanted: set[str], text: str, fused: float) -> float:
    words = terms(text)
    positions = [i for i, w in enumerate(words) if w in wanted]
    found = {words[i] for i in positions}
    coverage = len(found) / len(wanted)
    proximity = _proximity(words, positions, found) if found else 0.0
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
