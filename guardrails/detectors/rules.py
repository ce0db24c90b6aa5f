"""What the list-and-pattern detectors share: folding, word lists, weighted rules, scoring.

A detector folds the text once (case, accents, look-alike letters and leetspeak, so that
"1d10t" reads "idiot"), runs its rules over the folded text, drops hits that an exemption
covers, and blocks when the combined weight of what is left reaches the threshold that its
sensitivity sets. Every pattern is compiled when its module is imported.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from guardrails.detectors.kinds import kind_of
from guardrails.engines.base import PASS, Kind, Span, Verdict

DATA = Path(__file__).resolve().parent.parent / "data"

# Higher sensitivity blocks on weaker evidence.
THRESHOLDS = {"low": 0.9, "medium": 0.7, "high": 0.5}
RULES = "rules"  # the detector a rule-based verdict names

# One character in, one character out, so offsets in the folded text are offsets in the
# original. Digits read as letters only matter inside words ("10 items" folding to
# "io items" matches nothing); symbols only before a letter or digit, so that the "!" of
# "idiot!" stays punctuation while the one in "sh!t" reads as an "i".
_DIGITS = str.maketrans("013457", "oieast")
_SYMBOLS = {"@": "a", "$": "s", "!": "i", "|": "i"}
_SYMBOL_IN_WORD = re.compile(r"[@$!|](?=[a-z0-9])")
# Cyrillic letters that pass for Latin ones, and typographic apostrophes.
_LOOKALIKES = str.maketrans("аеорсхуіѕԁ\u2018\u2019\u02bc", "aeopcxyisd'''")
INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")


def threshold(sensitivity: str) -> float:
    """The score at which a detector of this sensitivity blocks; raises ValueError."""
    try:
        return THRESHOLDS[sensitivity]
    except KeyError:
        raise ValueError(
            f"sensitivity must be one of {', '.join(THRESHOLDS)}, not {sensitivity!r}"
        ) from None


@dataclass(frozen=True)
class Folded:
    """The folded text, and where each of its characters came from when that is not 1:1."""

    text: str
    origin: tuple[int, ...] | None = None

    def restore(self, hits: list[Hit]) -> list[Hit]:
        """The hits, found in the folded text, placed in the original text."""
        if self.origin is None:
            return hits
        origin = self.origin
        return [Hit(origin[h.start], origin[h.end - 1] + 1, h.label, h.weight) for h in hits]


class _FoldTable(dict[int, str]):
    """`str.translate`'s table for the fold below, filled as characters are met: the
    translation then runs in C, not a Python loop per character."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        # NFKD splits "é" into "e" and an accent and turns full-width "ｉ" into "i";
        # keeping the first character keeps the fold 1:1.
        folded = unicodedata.normalize("NFKD", char)[:1].lower()[:1] or char
        if len(self) < 20_000:  # text of every script at once must not grow it without end
            self[code] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> Folded:
    if text.isascii():
        return Folded(_leet(text.lower()))
    if INVISIBLE.isdisjoint(text):
        return Folded(_leet(text.translate(_FOLD).translate(_LOOKALIKES)))
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char in INVISIBLE:
            continue
        chars.append(_FOLD[ord(char)])
        origin.append(index)
    return Folded(_leet("".join(chars).translate(_LOOKALIKES)), tuple(origin))


def _leet(lowered: str) -> str:
    return _SYMBOL_IN_WORD.sub(lambda m: _SYMBOLS[m.group()], lowered).translate(_DIGITS)


_WORD = re.compile(r"[a-z]+")
_REPEATS = re.compile(r"(.)\1+")


def _key(text: str) -> str:
    # Stretched letters collapse, and "l" reads as the "i" that folding makes of a "1".
    return _REPEATS.sub(r"\1", text.replace("l", "i"))


class Gate:
    """The words one of which every rule of a detector needs: text without any of them
    skips the rules. A phrase opens the gate by its longest word or run together
    ("sand nigger", "sandnigger"); a word also by its plural."""

    def __init__(self, entries: Iterable[str]) -> None:
        keys: set[str] = set()
        for entry in entries:
            words = _WORD.findall(fold(entry).text)
            if words:
                keys.update((_key(max(words, key=len)), _key("".join(words))))
        self._keys = frozenset(keys)

    def opens(self, folded: str) -> bool:
        keys = self._keys
        return any(
            word in keys or word[:-1] in keys or word[:-2] in keys
            for word in _WORD.findall(_key(folded))
        )


def load_lists(name: str) -> dict[str, tuple[str, ...]]:
    """The `[section]`s of `guardrails/data/<name>.txt`, one entry a line, `#` comments."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif current is not None:
            current.append(line)
    return {section: tuple(words) for section, words in sections.items()}


def alternation(words: Iterable[str], plural: bool = True) -> str:
    """A non-capturing group matching any of the (folded) words, stretched letters too.

    "idiot" also matches "iddiot" and "idiooots"; an "l" also matches a "1" that folding
    read as "i"; a space or hyphen matches any run of them, or none.
    """
    parts = [_stretchable(fold(word).text) for word in words]
    parts.sort(key=len, reverse=True)
    suffix = "(?:e?s)?" if plural else ""
    return "(?:" + "|".join(parts) + ")" + suffix


def _stretchable(word: str) -> str:
    out: list[str] = []
    for char in word:
        if char in " -":
            out.append(r"[\s-]*")
        elif char == "l":
            out.append("[li]+")
        elif char.isalpha():
            out.append(re.escape(char) + "+")
        else:
            out.append(re.escape(char))
    return "".join(out)


def word(body: str, starts_with_letter: bool = True) -> str:
    """`body` as whole words: a letter at either end of a match must not touch another.

    The plain look-behind at the start lets `re` skip the middles of words quickly; a body
    that starts with punctuation (", idiot!") does without it."""
    start = "(?<![a-z])" if starts_with_letter else ""
    return rf"{start}(?:{body})(?:(?![a-z])|(?<![a-z]))"


@dataclass(frozen=True)
class WeightedPattern:
    """A pattern whose every match is evidence of `label`, as strong as `weight` (0 to 1)."""

    label: str
    weight: float
    pattern: re.Pattern[str]


def rule(label: str, weight: float, body: str, starts_with_letter: bool = True) -> WeightedPattern:
    return WeightedPattern(label, weight, re.compile(word(body, starts_with_letter)))


@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    label: str
    weight: float


def find(rules: Sequence[WeightedPattern], text: str) -> list[Hit]:
    return [
        Hit(match.start(), match.end(), item.label, item.weight)
        for item in rules
        for match in item.pattern.finditer(text)
    ]


def exempt(
    hits: list[Hit], exemptions: re.Pattern[str], text: str, labels: Container[str] | None = None
) -> list[Hit]:
    """Drop the hits (of these labels, or all) that overlap a passage an exemption matches."""
    if not hits:
        return hits
    safe = [match.span() for match in exemptions.finditer(text)]
    if not safe:
        return hits
    return [
        hit
        for hit in hits
        if (labels is not None and hit.label not in labels)
        or not any(s < hit.end and hit.start < e for s, e in safe)
    ]


def score(hits: Sequence[Hit]) -> tuple[float, list[Hit]]:
    """Independent pieces of evidence combine as a noisy-or; a hit inside a stronger one
    ("idiot" inside "you are an idiot") is the same evidence and does not count twice."""
    kept: list[Hit] = []
    for hit in sorted(hits, key=lambda h: (-h.weight, h.start - h.end, h.start)):
        if not any(k.start <= hit.start and hit.end <= k.end for k in kept):
            kept.append(hit)
    doubt = 1.0
    for hit in kept:
        doubt *= 1.0 - hit.weight
    return round(1.0 - doubt, 4), sorted(kept, key=lambda h: h.start)


def verdict(hits: Sequence[Hit], limit: float, reason: str, detector: str = RULES) -> Verdict:
    """Block when the hits (in the original text) together reach `limit`. Either way the
    verdict's kind and match are those of the strongest hit (what a classifier that blocks
    on the same text may borrow)."""
    if not hits:
        return PASS
    total, kept = score(hits)
    spans = tuple(Span(h.start, h.end, label=h.label) for h in kept)
    named = explain(kept)
    if total < limit:
        return Verdict(score=total, spans=spans, detector=detector, **named)
    labels = ", ".join(dict.fromkeys(h.label for h in kept))
    return Verdict(
        action="BLOCKED",
        score=total,
        spans=spans,
        reason=f"{reason}: {labels}",
        detector=detector,
        **named,
    )


class Explained(TypedDict):
    kind: Kind | None
    match: Span | None


def explain(hits: Sequence[Hit]) -> Explained:
    """The kind and span of the strongest hit whose label has a kind (the first of them on a
    tie): what a notice says the text was."""
    known = [h for h in hits if kind_of(h.label) is not None]
    best = max(known, key=lambda h: (h.weight, -h.start), default=None)
    if best is None:
        return {"kind": None, "match": None}
    return {"kind": kind_of(best.label), "match": Span(best.start, best.end, best.label)}


def combine(*verdicts: Verdict) -> Verdict:
    """Several detectors' verdicts on one text: blocked when any blocks, as sure as the
    surest, with every span, and the reasons of those that block; what was found (kind,
    detector, match) is the surest blocking verdict's."""
    score = max(v.score for v in verdicts)
    spans = tuple(span for v in verdicts for span in v.spans)
    blocking = [v for v in verdicts if v.blocked]
    if not blocking:
        return Verdict(score=score, spans=spans) if score or spans else PASS
    surest = max(blocking, key=lambda v: v.score)
    return Verdict(
        action="BLOCKED",
        score=score,
        spans=spans,
        reason="; ".join(v.reason for v in blocking),
        kind=surest.kind,
        detector=surest.detector,
        match=surest.match,
    )
