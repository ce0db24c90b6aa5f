"""A learned prompt-attack classifier that runs on CPU with the standard library alone.

Two logistic heads over TF-IDF features, their attack probabilities averaged: one over
SecureVector Guardian's vocabulary (`securevector-guardian-model`, Apache-2.0, whose wheel
ships it), one over word and character n-grams that at least three independent origins of
the public sets share. Both were chosen, fitted and their thresholds set by leaving one
origin out (guardrails/fitting, `python -m guardrails.training`,
docs/architecture.md#guardrail-detectors). Everything the platform needs is in one file,
`guardrails/data/prompt_attack_head.json.gz`: each head's vocabulary, idf and weights, and
the thresholds of each stage (a user's input, data an agent reads) and sensitivity.

Long text is scored in windows, the highest score wins: an attack buried in a long
document is not diluted by the benign text around it, and the work is capped.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import chain
from operator import itemgetter, mul
from typing import Any

from guardrails.detectors.kinds import GUARDIAN_KINDS
from guardrails.detectors.rules import DATA
from guardrails.engines.base import PASS, Kind, Span, Stage, Verdict

HEAD = DATA / "prompt_attack_head.json.gz"
WHOLE = 3000  # up to this many characters a text is scored whole: a 2 KB prompt is one
# Longer text is scored in windows about a paragraph long: an injection buried in a long
# document or tool result would be diluted by the benign text around it in a larger one.
WINDOW = 1200
STRIDE = 900  # windows overlap, so a sentence cut by one is whole in the next
MAX_WINDOWS = 24  # past this, windows spread evenly over the text: the cost stays bounded
LABEL = "learned classifier"
# Under this many words the classifier has too few n-grams to go on: it scored "no" and
# "3x5 and 2x4?" as attacks. Short text is the rules' alone; attacks that short are rare
# (the sets' shortest are phrases the rules know: "Developer mode enabled.").
MIN_WORDS = 6


@dataclass(frozen=True)
class Scored:
    score: float  # 0..1, the attack probability of the worst window
    start: int
    end: int  # the window it came from


@dataclass(frozen=True)
class Block:
    """One block of TF-IDF features as scikit-learn's TfidfVectorizer computes them: word
    n-grams or `char_wb` n-grams, sublinear tf, l2-normalised on their own."""

    vocab: dict[str, int]
    idf: list[float]
    ngram_range: tuple[int, int]
    sublinear: bool = True


class Head:
    """A linear head over two blocks of TF-IDF features (words, then characters).

    The extraction is scikit-learn's, rewritten with C-level loops (list comprehensions,
    Counter, itemgetter) to fit a check of a 2 KB prompt in a few milliseconds; tests check
    that it gives scikit-learn's and Guardian's own vectors.
    """

    def __init__(self, word: Block, char: Block, weights: dict[int, float], bias: float) -> None:
        self.word = word
        self.char = char
        self.word_vocab = word.vocab
        self.char_vocab = char.vocab
        self.offset = len(word.vocab)
        self.width = self.offset + len(char.vocab)
        # The head's weights by feature index, dense, so that itemgetter can gather them.
        head_row = [0.0] * self.width
        for column, weight in weights.items():
            head_row[column] = weight
        self.head_row = head_row
        self.bias = bias
        self._char_columns = lru_cache(maxsize=1 << 16)(self._word_char_columns)

    def _word_char_columns(self, word: str) -> tuple[int, ...]:
        vocab = self.char_vocab
        return tuple(
            vocab[gram] for gram in _char_wb(word, *self.char.ngram_range) if gram in vocab
        )

    def features(self, text: str) -> tuple[list[int], list[float]]:
        """The TF-IDF vector of `text` as (columns, values): words, then characters."""
        lowered = text.lower()
        tokens = _TOKEN.findall(lowered)
        lo, hi = self.word.ngram_range
        words = tokens[:] if lo == 1 else []
        for k in range(max(lo, 2), hi + 1):
            words += map(" ".join, zip(*(tokens[j:] for j in range(k)), strict=False))
        word = self.word
        columns, values = _block(words, word.vocab, word.idf, word.sublinear, 0)
        # A word's character n-grams do not depend on its neighbours: looked up once per
        # distinct word, and prose repeats its words.
        char_columns, char_values = _weigh(
            Counter(chain.from_iterable(map(self._char_columns, lowered.split()))),
            self.char.idf,
            self.char.sublinear,
            self.offset,
        )
        return columns + char_columns, values + char_values

    def probability(self, text: str) -> float:
        z = self.bias + _dot(*self.features(text), self.head_row)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


class PromptClassifier:
    """The heads of the head file, whose attack probabilities are averaged, and the
    thresholds of each stage and sensitivity."""

    def __init__(self, heads: list[Head], thresholds: dict[str, dict[str, float]]) -> None:
        self.heads = heads
        self.thresholds = thresholds  # by stage ("input", "context"), then sensitivity

    def probability(self, text: str) -> float:
        return sum(head.probability(text) for head in self.heads) / len(self.heads)

    def score(self, text: str) -> Scored:
        best = Scored(0.0, 0, 0)
        for start, end in windows(len(text)):
            p = self.probability(text[start:end])
            if p > best.score:
                best = Scored(p, start, end)
        return best


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token pattern, as Guardian's


def _char_wb(lowered: str, lo: int, hi: int) -> list[str]:
    """scikit-learn's `char_wb` n-grams: each word padded with a space either side; a word
    no longer than n is one n-gram, and longer n are not tried for it."""
    grams: list[str] = []
    for word in lowered.split():
        padded = f" {word} "
        size = len(padded)
        for n in range(lo, hi + 1):
            if size <= n:
                grams.append(padded)
                break
            grams += [padded[i : i + n] for i in range(size - n + 1)]
    return grams


def _block(
    grams: list[str], vocab: dict[str, int], idf: list[float], sublinear: bool, offset: int
) -> tuple[list[int], list[float]]:
    counts = Counter(map(vocab.__getitem__, filter(vocab.__contains__, grams)))
    return _weigh(counts, idf, sublinear, offset)


def _weigh(
    counts: Counter[int], idf: list[float], sublinear: bool, offset: int
) -> tuple[list[int], list[float]]:
    """Term counts by column turned into l2-normalised TF-IDF values."""
    found = list(counts)
    columns = [offset + column for column in found] if offset else found
    tf = map(_SUBLINEAR.__getitem__, counts.values()) if sublinear else counts.values()
    values = list(map(mul, tf, map(idf.__getitem__, found)))
    norm = math.sqrt(sum(map(mul, values, values)))
    return columns, [v / norm for v in values] if norm else values


class _Sublinear(dict[int, float]):
    """1 + log(count), each worked out once."""

    def __missing__(self, count: int) -> float:
        value = 1.0 + math.log(count)
        if count < 4096:
            self[count] = value
        return value


_SUBLINEAR = _Sublinear()


def _dot(columns: list[int], values: list[float], row: list[float]) -> float:
    if len(columns) > 1:
        return sum(map(mul, values, itemgetter(*columns)(row)))
    return values[0] * row[columns[0]] if columns else 0.0


def windows(length: int) -> Iterator[tuple[int, int]]:
    """The (start, end) windows that cover a text of `length`, at most MAX_WINDOWS of them."""
    if length <= WHOLE:
        yield 0, length
        return
    starts = list(range(0, length - WINDOW + STRIDE, STRIDE))
    if len(starts) > MAX_WINDOWS:
        # The first and the last window always, and the others spread evenly between.
        step = (length - WINDOW) / (MAX_WINDOWS - 1)
        starts = [round(i * step) for i in range(MAX_WINDOWS)]
    for start in starts:
        start = min(start, length - WINDOW)
        yield start, start + WINDOW


@cache
def prompt_classifier() -> PromptClassifier:
    """The shared classifier, loaded once per process from the head file (its vocabulary,
    idf and weights: guardrails.training writes it)."""
    data = json.loads(gzip.decompress(HEAD.read_bytes()))
    return PromptClassifier([read_head(head) for head in data["heads"]], data["thresholds"])


def read_head(head: dict[str, Any]) -> Head:
    blocks: list[Block] = []
    weights: dict[int, float] = {}
    for name in ("word", "char"):
        part = head[name]
        offset = sum(len(b.vocab) for b in blocks)
        grams = part["grams"]  # [[gram, idf, weight], ...], the column is the position
        blocks.append(
            Block(
                vocab={gram: k for k, (gram, _, _) in enumerate(grams)},
                idf=[float(idf) for _, idf, _ in grams],
                ngram_range=(int(part["ngram_range"][0]), int(part["ngram_range"][1])),
                sublinear=bool(part.get("sublinear", True)),
            )
        )
        weights.update({offset + k: float(w) for k, (_, _, w) in enumerate(grams) if w})
    return Head(blocks[0], blocks[1], weights, float(head["bias"]))


def guardian_kind(text: str) -> Kind | None:
    """The kind of attack Guardian's most likely class names, if it names one."""
    g = guardian_model()
    logits = [
        b + _dot(*_guardian_features().features(text), row)
        for b, row in zip(g.intercept, g.coef, strict=True)
    ]
    top = max(range(len(logits)), key=logits.__getitem__)
    return GUARDIAN_KINDS.get(g.classes[top])


@cache
def _guardian_features() -> Head:
    return Head(*guardian_blocks(), {}, 0.0)


def guardian_blocks() -> tuple[Block, Block]:
    """Guardian's vocabulary and idf, as blocks (to fit a head over them)."""
    g = guardian_model()
    return tuple(  # type: ignore[return-value]
        Block(
            vocab=dict(part["vocab"]),
            idf=list(part["idf"]),
            ngram_range=(int(part["ngram_range"][0]), int(part["ngram_range"][1])),
            sublinear=bool(part["sublinear_tf"]),
        )
        for part in (g.word, g.char)
    )


@cache
def guardian_model() -> Any:
    """Guardian's model from its wheel; raises LookupError when the package is missing."""
    try:
        from svguardian import resolve_runtime
        from svguardian.model.pure_infer import PureGuardian
    except ImportError as exc:
        raise LookupError(
            f"the classifier needs the 'securevector-guardian-model' package: {exc}"
        ) from exc
    # download=False: the wheel ships the model; a missing one must fail, never fetch.
    return PureGuardian.load(resolve_runtime(download=False))


class ClassifierDetector:
    """The classifier alone behind the Detector interface: blocks when the attack
    probability of any window reaches the threshold of the stage and `sensitivity` (chosen
    on out-of-origin scores, see guardrails.fitting.loso); the span is that window."""

    def __init__(self, sensitivity: str = "medium") -> None:
        self.classifier = prompt_classifier()
        by_stage = self.classifier.thresholds
        if sensitivity not in by_stage["input"]:
            names = ", ".join(by_stage["input"])
            raise ValueError(f"sensitivity must be one of {names}, not {sensitivity!r}")
        # Data an agent reads (tool results, passages) has thresholds of its own, tuned on
        # real code, documentation and e-mails rather than on what users type.
        self.thresholds = {stage: t[sensitivity] for stage, t in by_stage.items()}

    def check(self, text: str, stage: Stage) -> Verdict:
        if len(text.split(maxsplit=MIN_WORDS)) < MIN_WORDS:
            return PASS
        scored = self.classifier.score(text)
        score = round(scored.score, 4)
        spans = (Span(scored.start, scored.end, LABEL),)
        if score < self.thresholds["context" if stage == "context" else "input"]:
            return Verdict(score=score, spans=spans)
        # The head says how likely an attack is, not which: Guardian's class scores of the
        # window say which, when they name one.
        kind = guardian_kind(text[scored.start : scored.end])
        return Verdict(
            action="BLOCKED",
            score=score,
            spans=spans,
            reason=f"prompt attack: {LABEL}",
            kind=kind or ("indirect" if stage == "context" else "override"),
            detector=LABEL,
            match=spans[0],
        )
