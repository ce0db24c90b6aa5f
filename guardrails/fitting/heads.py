"""A linear head over a featurizer, fitted so that every origin counts alike, and scored the
way the platform scores: long text in windows, the worst window wins."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from guardrails.detectors.classifier import windows
from guardrails.fitting.corpus import Text
from guardrails.fitting.features import Featurizer, Pieces

Make = Callable[[Pieces], Featurizer]

# Inverse regularisation, compared on the leave-one-origin-out table at 1, 4 and 16: a
# stronger prior spreads weight over more n-grams, which is what carries to a new origin.
C = 4.0
# A text is fitted whole up to this many characters; past it, on its first window: the
# platform scores long text in windows, and a 30 KB jailbreak's tail is its own text again.
FIT_CHARS = 3000


def sample_weights(texts: Sequence[Text]) -> list[float]:
    """Each origin weighs the same within its class, and the two classes weigh the same: a
    large collection must not teach its own wording as what an attack is."""
    per_origin = Counter((t.origin, t.attack) for t in texts)
    origins_per_class = Counter(attack for _, attack in per_origin)
    return [
        1.0 / per_origin[(t.origin, t.attack)] / origins_per_class[t.attack] * len(texts) / 2
        for t in texts
    ]


def pieces(texts: Sequence[Text]) -> Pieces:
    """Every string that fitting or scoring `texts` reads."""
    strings = [t.text[:FIT_CHARS] for t in texts]
    strings += [t.text[start:end] for t in texts for start, end in windows(len(t.text))]
    return Pieces(strings)


@dataclass(frozen=True)
class Fitted:
    """One head per featurizer of an approach, fitted on the same texts."""

    members: tuple[tuple[Featurizer, Any], ...]  # (featurizer, scikit-learn model)


def fit(make: Sequence[Make], pieces: Pieces, texts: Sequence[Text]) -> Fitted:
    from sklearn.linear_model import LogisticRegression

    rows = pieces.rows([t.text[:FIT_CHARS] for t in texts])
    labels = [int(t.attack) for t in texts]
    weights = sample_weights(texts)
    members = []
    for each in make:
        featurizer = each(pieces).fit(rows, [t.origin for t in texts])
        model = LogisticRegression(C=C, solver="liblinear")
        model.fit(featurizer.transform(rows), labels, sample_weight=weights)
        members.append((featurizer, model))
    return Fitted(tuple(members))


def score(fitted: Fitted, pieces: Pieces, texts: Sequence[str]) -> list[float]:
    """Each text's attack probability as the platform computes it: the heads' probabilities
    averaged in each window, the worst window's."""
    parts: list[str] = []
    owners: list[int] = []
    for k, text in enumerate(texts):
        for start, end in windows(len(text)):
            parts.append(text[start:end])
            owners.append(k)
    rows = pieces.rows(parts)
    each = [model.predict_proba(f.transform(rows))[:, 1] for f, model in fitted.members]
    averaged = sum(each) / len(each)
    best = [0.0] * len(texts)
    for owner, p in zip(owners, averaged, strict=True):
        best[owner] = max(best[owner], float(p))
    return best
