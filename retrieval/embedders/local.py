"""A lexical embedder that needs no model and no network: hashed word unigrams and bigrams.

A text is case-folded and NFKC-normalised, and loses the accents of U+0300–U+036F, as a
search engine's accent folding does (`café` matches `cafe`, `ё` matches `е`); other marks
(Indic vowel signs, Arabic harakat …) stay inside their words. Words are runs of letters,
digits and marks, except that CJK ideographs and kana count one character each, so that
their bigrams are the usual character bigrams.
Every unigram and bigram adds `1 + ln(tf)` to one of `dimension` buckets with a sign, both
taken from its BLAKE2b hash (stable across processes and machines, unlike `hash()`), and
the sum is L2-normalised: the cosine of two vectors measures the words they share.

A text without words (empty, punctuation only) embeds as one fixed unit vector, not as
zeros: pgvector's cosine distance to a zero vector is NaN, which would poison a ranking.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import unicodedata
from collections import Counter

# Ideographs (with extensions and compatibility forms) and kana: written without spaces.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Beyond this many cached feature slots, the cache starts over: a worker embedding a large
# corpus meets millions of distinct bigrams, and each entry costs about 150 bytes.
CACHE_LIMIT = 1 << 17
# No word can contain a NUL, so this feature stands for "no words at all".
NO_WORDS = "\x00"
WEIGHTS = [0.0, *(1.0 + math.log(tf) for tf in range(1, 64))]


def _ranges(codepoints: list[int]) -> str:
    """`codepoints` (sorted) as the inside of a regex character class."""
    parts: list[str] = []
    start = previous = codepoints[0]
    for point in [*codepoints[1:], -1]:
        if point != previous + 1:
            parts.append(re.escape(chr(start)))
            if previous != start:
                parts.append("-" + re.escape(chr(previous)))
            start = point
        previous = point
    return "".join(parts)


def _marks(*blocks: range) -> str:
    return _ranges([p for b in blocks for p in b if unicodedata.category(chr(p))[0] == "M"])


# `\w` leaves out combining marks, which would cut Devanagari, Arabic or Thai words into
# pieces, so a word goes on through marks (and zero-width joiners, for Indic and Persian).
# Marks are only looked for where `\w` stops: a big character class tested at every
# character would triple the time. Those of the BMP get a class of their own because
# the regex engine tests a BMP-only class against a bitmap, and the rest a linear scan.
# Past U+1FFFF, only variation selectors are marks.
BMP_MARKS = _marks(range(0x0300, 0x10000)) + "\u200c\u200d"
OTHER_MARKS = _marks(range(0x10000, 0x20000), range(0xE0100, 0xE01F0))
MARKS = f"(?:[{BMP_MARKS}]|[{OTHER_MARKS}])"
ASCII_WORD = re.compile(r"\w+", re.ASCII)
WORD = re.compile(rf"\w+(?:{MARKS}+\w*)*")
CJK_CHAR = re.compile(f"[{CJK}]")
CJK_WORD = re.compile(rf"[{CJK}]|[^\W{CJK}]+(?:{MARKS}+[^\W{CJK}]*)*")
LATIN_ACCENTS = re.compile("[\u0300-\u036f]+")


def words(text: str) -> list[str]:
    """The words of `text`, folded as the module docstring says."""
    text = text.casefold()
    if text.isascii():
        return ASCII_WORD.findall(text)
    text = unicodedata.normalize("NFKD", text)
    text = unicodedata.normalize("NFC", LATIN_ACCENTS.sub("", text))
    return (CJK_WORD if CJK_CHAR.search(text) else WORD).findall(text)


class LocalEmbedder:
    """Feature hashing of word unigrams and bigrams; deterministic and offline.

    Options of the registry other than `dimension` (model, batch size, retries, timeout)
    do not apply and are ignored. Raises ValueError for a dimension below 1.
    """

    def __init__(self, *, dimension: int, **_options: object) -> None:
        if dimension < 1:
            raise ValueError(f"the embedding dimension must be at least 1, not {dimension}")
        self.dimension = dimension
        self._slots: dict[str, tuple[int, float]] = {}

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def vector(self, text: str) -> list[float]:
        tokens = words(text)
        features = Counter(tokens)
        features.update([f"{a} {b}" for a, b in itertools.pairwise(tokens)])
        vector = [0.0] * self.dimension
        slots = self._slots
        for feature, tf in features.items():
            slot = slots.get(feature) or self._slot(feature)
            vector[slot[0]] += slot[1] * (WEIGHTS[tf] if tf < 64 else 1.0 + math.log(tf))
        norm = math.hypot(*vector)
        if not norm:  # no words, or (in theory) features that cancel out exactly
            index, sign = self._slot(NO_WORDS)
            vector = [0.0] * self.dimension
            vector[index] = sign
            return vector
        scale = 1.0 / norm
        return [value * scale for value in vector]

    def _slot(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8)
        number = int.from_bytes(digest.digest(), "little")
        slot = (number % self.dimension, 1.0 if number >> 63 else -1.0)
        if len(self._slots) >= CACHE_LIMIT:
            self._slots.clear()
        self._slots[feature] = slot
        return slot
