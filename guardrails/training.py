"""Fits the prompt-attack classifier on every origin of the public sets (guardrails.quality)
and writes guardrails/data/prompt_attack_head.json.gz: its vocabulary, idf and weights, and
the thresholds of each stage and sensitivity.

    .venv/bin/python -m guardrails.training [--approach guardian|ngrams]

Development only: it needs scikit-learn and the data packages (requirements-dev.txt,
requirements-datasets.txt); the platform only reads the file it writes. How well this
generalises is measured by leaving each origin out in turn (guardrails.fitting.loso,
printed by bench/guard_quality.py): the approach and the way thresholds are chosen here
are the ones that table measured, applied to all origins at once.
"""

from __future__ import annotations

import argparse
import gzip
import json
from typing import Any

from guardrails.detectors.classifier import HEAD, Block
from guardrails.fitting import corpus, heads, loso
from guardrails.fitting.features import APPROACHES, FEATURIZERS

# Chosen on the leave-one-origin-out table (bench/README.md#guard-quality).
APPROACH = "both"


def fit(approach: str = APPROACH) -> dict[str, Any]:
    texts = corpus.texts()
    pieces = heads.pieces(texts)
    make = [FEATURIZERS[name] for name in APPROACHES[approach]]
    # Thresholds on out-of-origin scores, as each fold of the table chose them.
    chosen = loso.thresholds(texts, loso.out_of_origin_scores(make, pieces, texts))
    fitted = heads.fit(make, pieces, texts)
    return {
        "about": f"prompt-attack heads, approach {approach!r}, fitted by guardrails/training.py "
        f"on {len(texts)} texts of {len({t.origin for t in texts})} origins; their "
        "probabilities are averaged",
        "approach": approach,
        "thresholds": chosen,
        "heads": [_head(featurizer, model) for featurizer, model in fitted.members],
    }


def _head(featurizer: Any, model: Any) -> dict[str, Any]:
    coef, bias = featurizer.fold(model.coef_[0], float(model.intercept_[0]))
    word, char = featurizer.blocks()
    return {
        "featurizer": featurizer.name,
        "bias": round(bias, 5),
        "word": _grams(word, coef[: len(word.vocab)]),
        "char": _grams(char, coef[len(word.vocab) :]),
    }


def _grams(block: Block, weights: Any) -> dict[str, Any]:
    by_column = sorted(block.vocab.items(), key=lambda item: item[1])
    return {
        "ngram_range": list(block.ngram_range),
        "sublinear": block.sublinear,
        "grams": [
            [gram, round(block.idf[column], 4), round(float(weights[column]), 4)]
            for gram, column in by_column
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--approach", choices=sorted(APPROACHES), default=APPROACH)
    head = fit(parser.parse_args().approach)
    text = json.dumps(head, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    # mtime 0: the same head gives the same bytes, so a refit that changes nothing shows none.
    HEAD.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"wrote {HEAD} ({HEAD.stat().st_size:,} bytes): thresholds {head['thresholds']}")


if __name__ == "__main__":
    main()
