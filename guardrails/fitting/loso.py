"""Leave one origin out: for each origin, fit the vocabulary and the head on every other
origin, choose the thresholds on every other origin, then score the origin left out. Its
recall (an attack origin) or false-positive rate (a benign one) is what a user of the
platform meets on text from a source that no part of the detector was fitted or tuned on.

Thresholds are chosen on out-of-origin scores too (the training origins in groups, each
scored by a head fitted without it), never on scores of texts a head has seen: seen text
scores far from where new text does.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from guardrails.fitting import heads
from guardrails.fitting.corpus import UNREPORTED, Text
from guardrails.fitting.features import Pieces
from guardrails.fitting.heads import Make

# The share of benign text a sensitivity may block, averaged over the benign origins of a
# stage (each origin counts alike, whatever its size).
BUDGETS = {"low": 0.003, "medium": 0.01, "high": 0.03}
STAGES = {"input": "prompt", "context": "context"}  # a stage's thresholds: its channel's text
INNER_GROUPS = 4

Thresholds = dict[str, dict[str, float]]  # stage, then sensitivity


@dataclass(frozen=True)
class Held:
    """One origin left out: the thresholds chosen without it, and its texts' scores."""

    origin: str
    thresholds: Thresholds
    texts: tuple[Text, ...]
    scores: tuple[float, ...]


def thresholds(texts: Sequence[Text], scores: Sequence[float]) -> Thresholds:
    """For each stage and sensitivity, the lowest threshold at which the benign origins of
    the stage's channel lose at most the budget's share on average."""
    chosen: Thresholds = {}
    for stage, channel in STAGES.items():
        by_origin: dict[str, list[float]] = defaultdict(list)
        for text, s in zip(texts, scores, strict=True):
            if not text.attack and text.origin not in UNREPORTED and text.channel == channel:
                by_origin[text.origin].append(s)
        if not by_origin:  # no benign text of the channel: the input's thresholds
            by_origin = {t.origin: [] for t in texts if not t.attack and t.origin not in UNREPORTED}
            for text, s in zip(texts, scores, strict=True):
                if text.origin in by_origin:
                    by_origin[text.origin].append(s)
        chosen[stage] = {name: _lowest(by_origin, budget) for name, budget in BUDGETS.items()}
    return chosen


def _lowest(by_origin: dict[str, list[float]], budget: float) -> float:
    ordered = {o: sorted(s) for o, s in by_origin.items()}

    def mean_blocked(t: float) -> float:
        return sum((len(s) - bisect.bisect_left(s, t)) / len(s) for s in ordered.values()) / len(
            ordered
        )

    candidates = sorted({round(s + 1e-4, 4) for s in _all(ordered)} | {0.5})
    # The share blocked falls as the threshold rises: the first candidate within budget.
    low, high = 0, len(candidates) - 1
    while low < high:
        middle = (low + high) // 2
        if mean_blocked(candidates[middle]) <= budget:
            high = middle
        else:
            low = middle + 1
    return min(0.9999, candidates[low])


def _all(ordered: dict[str, list[float]]) -> list[float]:
    return [s for scores in ordered.values() for s in scores]


def out_of_origin_scores(
    make: Sequence[Make], pieces: Pieces, texts: Sequence[Text], groups: int = INNER_GROUPS
) -> list[float]:
    """Each text scored by a head fitted without its origin's group (origins in `groups`
    groups, the fitting-only prose always fitted)."""
    origins = sorted({t.origin for t in texts if t.origin not in UNREPORTED})
    group_of = {o: k % groups for k, o in enumerate(origins)}
    scores = [0.0] * len(texts)
    for group in range(groups):
        inside = [t for t in texts if all(group_of.get(o) != group for o in (t.origin, *t.parts))]
        outside = [k for k, t in enumerate(texts) if group_of.get(t.origin) == group]
        if not outside:
            continue
        fitted = heads.fit(make, pieces, inside)
        outside_texts = [texts[k].text for k in outside]
        for k, s in zip(outside, heads.score(fitted, pieces, outside_texts), strict=True):
            scores[k] = s
    return scores


def leave_one_origin_out(
    make: Sequence[Make],
    texts: Sequence[Text],
    only: Sequence[str] | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> list[Held]:
    origins = sorted({t.origin for t in texts if t.origin not in UNREPORTED})
    pieces = heads.pieces(texts)
    held: list[Held] = []
    for origin in origins:
        if only and origin not in only:
            continue
        progress(origin)
        rest = [t for t in texts if not t.of(origin)]
        mine = tuple(t for t in texts if t.origin == origin)
        chosen = thresholds(rest, out_of_origin_scores(make, pieces, rest))
        fitted = heads.fit(make, pieces, rest)
        scores = heads.score(fitted, pieces, [t.text for t in mine])
        held.append(Held(origin, chosen, mine, tuple(scores)))
    return held
