"""Profanity: glin-profanity's English word list and obfuscation-aware matcher.

glin-profanity (MIT, its list and matcher inside the wheel, no network or model at run
time) catches spaced ("f u c k"), stretched ("fuuuck"), masked ("f*ck") and leetspeak
("sh1t", "@ss") spellings and matches whole words only, so "Scunthorpe", "assassin bugs"
and "class assignment" pass. guardrails/data/profanity.txt takes clinical words and
phrases with an everyday sense off its list and adds the inflections it lacks.
"""

from __future__ import annotations

import functools
from typing import Any

from guardrails.detectors.rules import load_lists
from guardrails.engines.base import PASS, Span, Stage, Verdict

try:
    from glin_profanity import Filter
except ImportError as exc:
    raise ImportError(
        "the profanity detector needs glin-profanity: pip install glin-profanity==4.1.0"
    ) from exc

# glin reports where a hit starts but not where it ends; asked to mask hits, it replaces
# each (merged) hit with this private-use character, and the text between marks gives the
# ends back.
_MARK = "\ue000"


@functools.cache
def _filter() -> Any:
    lists = load_lists("profanity")
    return Filter(
        {
            "languages": ["english"],
            "custom_words": list(lists["extra"]),
            "detect_leetspeak": True,
            "obfuscation": "standard",
            "ignore_words": list(lists["allow"]),
            "whitelist": list(lists["safe phrase"]),
            "replace_with": _MARK,
        }
    )


class ProfanityDetector:
    """Blocks profane words, however spelled; the spans cover the words as written."""

    def __init__(self) -> None:
        self._filter = _filter()

    def check(self, text: str, stage: Stage) -> Verdict:
        text = text.replace(_MARK, " ")
        if not self._filter.is_profane(text):
            return PASS
        result = self._filter.check_profanity(text)
        starts = sorted({match["index"] for match in result.get("matches") or ()})
        masked = result.get("processed_text") or text
        spans = tuple(Span(s, e, "profanity") for s, e in _unmask(text, masked, starts))
        words = ", ".join(dict.fromkeys(text[s.start : s.end] for s in spans))
        return Verdict(
            action="BLOCKED",
            score=1.0,
            spans=spans,
            reason=f"profanity: {words}",
            kind="profanity",
            detector="profanity word list",
            match=spans[0] if spans else None,
        )


def _unmask(text: str, masked: str, starts: list[int]) -> list[tuple[int, int]]:
    """Where each mark of `masked` stood in `text`, given the hits' starts."""
    pieces = masked.split(_MARK)
    spans: list[tuple[int, int]] = []
    start = len(pieces[0])
    for number, piece in enumerate(pieces[1:], start=1):
        if number == len(pieces) - 1:
            spans.append((start, len(text) - len(piece)))
            break
        # The next mark starts at a hit, right after this piece of unmasked text.
        after = next(
            (s for s in starts if s - len(piece) > start and text[s - len(piece) : s] == piece),
            None,
        )
        if after is None:
            after = text.find(piece, start + 1) + len(piece)
        spans.append((start, after - len(piece)))
        start = after
    return spans
