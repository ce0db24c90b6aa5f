"""The two approaches compared on the leave-one-origin-out table, as featurizers.

- `guardian`: SecureVector Guardian's vocabulary (word 1-2-grams and char 3-5-grams it
  learned on its own English-heavy training data) and its eight class scores.
- `ngrams`: a vocabulary learned here from the training fold, word 1-2-grams and char_wb
  2-5-grams, keeping only the n-grams that occur in texts of at least `MIN_ORIGINS`
  origins: what one collection alone says (its template names, its formatting) is not a
  feature, what several independent authors of attacks and of ordinary text share is.

Both are TF-IDF as scikit-learn computes it (sublinear tf, smooth idf, l2 per block), so
the platform's pure-Python extraction (guardrails.detectors.classifier) reads either.
Every piece of text a fold may fit or score on is counted once (`Counts`); a fold only
chooses columns and idf, which keeps a leave-one-origin-out run to minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from guardrails.detectors.classifier import Block, Head, guardian_blocks

MIN_ORIGINS = 3
MAX_WORDS = 40_000
MAX_CHARS = 80_000
WORD_RANGE = (1, 2)
CHAR_RANGE = (2, 5)


class Featurizer(Protocol):
    name: str

    def fit(self, rows: Sequence[int], origins: Sequence[str]) -> Featurizer: ...

    def transform(self, rows: Sequence[int]) -> Any: ...  # a scipy CSR matrix

    def blocks(self) -> tuple[Block, Block]: ...  # the vocabulary, for the runtime

    def fold(self, coef: Any, intercept: float) -> tuple[Any, float]:
        """A head's weights over `transform`'s columns as weights over the blocks' columns
        alone (and its bias): extra columns that are linear in the others fold in."""
        ...


class Pieces:
    """Every string a fold fits or scores on, each counted once: rows of the matrices."""

    def __init__(self, strings: Sequence[str]) -> None:
        self.strings = list(dict.fromkeys(strings))
        self.row = {s: k for k, s in enumerate(self.strings)}
        self._counts: dict[str, tuple[Any, list[str]]] = {}

    def rows(self, strings: Sequence[str]) -> list[int]:
        return [self.row[s] for s in strings]

    def counts(self, analyzer: str, span: tuple[int, int]) -> tuple[Any, list[str]]:
        """Term counts of every piece (n-grams in at least two pieces), and their names."""
        key = f"{analyzer}{span}"
        if key not in self._counts:
            from sklearn.feature_extraction.text import CountVectorizer

            vectorizer = CountVectorizer(analyzer=analyzer, ngram_range=span, min_df=2)
            matrix = vectorizer.fit_transform(self.strings).tocsc()
            self._counts[key] = matrix, [str(n) for n in vectorizer.get_feature_names_out()]
        return self._counts[key]


class GuardianFeatures:
    name = "guardian"

    def __init__(self, pieces: Pieces) -> None:
        from guardrails.detectors.classifier import guardian_model

        self.word, self.char = guardian_blocks()
        self.guardian = guardian_model()
        self.width = len(self.word.vocab) + len(self.char.vocab)
        self.matrix = _guardian_matrix(pieces, self.word, self.char, self.guardian)

    def fit(self, rows: Sequence[int], origins: Sequence[str]) -> GuardianFeatures:
        return self  # a fixed vocabulary

    def transform(self, rows: Sequence[int]) -> Any:
        return self.matrix[list(rows)]

    def blocks(self) -> tuple[Block, Block]:
        return self.word, self.char

    def fold(self, coef: Any, intercept: float) -> tuple[Any, float]:
        import numpy

        guardian = numpy.asarray(self.guardian.coef)
        folded = coef[: self.width] + coef[self.width :] @ guardian
        bias = intercept + float(coef[self.width :] @ numpy.asarray(self.guardian.intercept))
        return folded, bias


_GUARDIAN: dict[int, Any] = {}


def _guardian_matrix(pieces: Pieces, word: Block, char: Block, guardian: Any) -> Any:
    """Guardian's features and class scores of every piece, computed once per Pieces."""
    if id(pieces) in _GUARDIAN:
        return _GUARDIAN[id(pieces)]
    import numpy
    from scipy.sparse import csr_matrix, hstack

    classifier = Head(word, char, {}, 0.0)
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    for row, text in enumerate(pieces.strings):
        columns, weights = classifier.features(text)
        rows += [row] * len(columns)
        cols += columns
        values += weights
    features = csr_matrix((values, (rows, cols)), shape=(len(pieces.strings), classifier.width))
    classes = features @ numpy.asarray(guardian.coef).T + numpy.asarray(guardian.intercept)
    _GUARDIAN[id(pieces)] = matrix = hstack([features, csr_matrix(classes)], format="csr")
    return matrix


class NgramFeatures:
    name = "ngrams"

    def __init__(self, pieces: Pieces) -> None:
        self.pieces = pieces
        self.chosen: list[tuple[list[int], Any, Any]] = []  # per block: columns, idf, names

    def fit(self, rows: Sequence[int], origins: Sequence[str]) -> NgramFeatures:
        self.chosen = [
            self._choose(rows, origins, "word", WORD_RANGE, MAX_WORDS),
            self._choose(rows, origins, "char_wb", CHAR_RANGE, MAX_CHARS),
        ]
        return self

    def _choose(
        self,
        rows: Sequence[int],
        origins: Sequence[str],
        analyzer: str,
        span: tuple[int, int],
        most: int,
    ) -> tuple[list[int], Any, Any]:
        """The n-grams found in the fold's texts of at least MIN_ORIGINS origins (the
        `most` frequent), and their idf over the fold's texts."""
        import numpy
        from scipy.sparse import csr_matrix

        counts, names = self.pieces.counts(analyzer, span)
        present = (counts.tocsr()[list(rows)] > 0).astype(numpy.float64)
        labels = sorted(set(origins))
        index = {o: k for k, o in enumerate(labels)}
        membership = csr_matrix(
            (numpy.ones(len(origins)), (range(len(origins)), [index[o] for o in origins])),
            shape=(len(origins), len(labels)),
        )
        spread = numpy.asarray(((present.T @ membership) > 0).sum(axis=1)).ravel()
        df = numpy.asarray(present.sum(axis=0)).ravel()
        keep = numpy.flatnonzero(spread >= MIN_ORIGINS)
        keep = numpy.sort(keep[numpy.argsort(-df[keep], kind="stable")[:most]])
        idf = numpy.log((1 + len(rows)) / (1 + df[keep])) + 1  # scikit-learn's smooth idf
        return list(keep), idf, [names[k] for k in keep]

    def transform(self, rows: Sequence[int]) -> Any:
        import numpy
        from scipy.sparse import diags, hstack
        from sklearn.preprocessing import normalize

        blocks = []
        for (analyzer, span), (columns, idf, _) in zip(
            (("word", WORD_RANGE), ("char_wb", CHAR_RANGE)), self.chosen, strict=True
        ):
            counts, _ = self.pieces.counts(analyzer, span)
            tf = counts[:, columns].tocsr()[list(rows)].astype(numpy.float64)
            tf.data = 1.0 + numpy.log(tf.data)  # sublinear tf
            blocks.append(normalize(tf @ diags(idf)))
        return hstack(blocks, format="csr")

    def blocks(self) -> tuple[Block, Block]:
        word, char = (
            Block(
                vocab={name: k for k, name in enumerate(names)},
                idf=[float(x) for x in idf],
                ngram_range=span,
                sublinear=True,
            )
            for (_, idf, names), span in zip(self.chosen, (WORD_RANGE, CHAR_RANGE), strict=True)
        )
        return word, char

    def fold(self, coef: Any, intercept: float) -> tuple[Any, float]:
        return coef, intercept


FEATURIZERS: dict[str, type[GuardianFeatures] | type[NgramFeatures]] = {
    "guardian": GuardianFeatures,
    "ngrams": NgramFeatures,
}
# An approach is one head per featurizer, their probabilities averaged.
APPROACHES: dict[str, tuple[str, ...]] = {
    "guardian": ("guardian",),
    "ngrams": ("ngrams",),
    "both": ("guardian", "ngrams"),
}
