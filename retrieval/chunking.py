"""Split text into overlapping pieces of whole sentences, sized in tokens.

No model tokenizer can be fetched at run time, so a token is what `TOKEN` matches: a run of
letters and digits (at most 16 characters: a longer word counts as several, as subword
tokenizers would count it), a number such as 3.14 or 1,000, a single CJK character, or any
other single non-space character (punctuation, a symbol, an emoji code point). It counts
about as many tokens as a model tokenizer does on English prose, more on code and symbols.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import sentencex

# Hiragana, Katakana, CJK ideographs (with extension A and compatibility), Hangul syllables,
# half-width Katakana, and the supplementary ideograph planes.
_CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
TOKEN = re.compile(rf"[{_CJK}]|\d(?:\d|[.,](?=\d)){{0,15}}|[^\W{_CJK}]{{1,16}}|\S")
_WORD = re.compile(r"\S+")
# sentencex's English rules; they also end sentences at CJK full stops.
_LANGUAGE = "en"

_LEVEL_SENTENCE, _LEVEL_WORD, _LEVEL_TOKEN = 0, 1, 2


@dataclass(frozen=True)
class Piece:
    position: int
    text: str
    token_count: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    tokens: int
    level: int


def count_tokens(text: str) -> int:
    """How many tokens `split` counts in `text`."""
    return len(TOKEN.findall(text))


def split(text: str, *, size: int = 256, overlap: int = 32) -> list[Piece]:
    """Pieces of at most `size` tokens, each `text[start:end]` exactly, trimmed of whitespace.

    A piece ends at a sentence boundary unless one sentence alone is longer than `size`; then
    that sentence is cut between words, and a word longer than `size` between tokens. The next
    piece starts with the trailing whole sentences of this one that fit in `overlap` tokens
    (its trailing words when the last sentence alone is longer). Raises ValueError unless
    size > overlap >= 0.
    """
    if not 0 <= overlap < size:
        raise ValueError(f"need size > overlap >= 0, got size={size}, overlap={overlap}")
    pieces: list[Piece] = []
    window: list[_Span] = []
    tokens = 0
    for span in _units(text, size):
        if window and tokens + span.tokens > size:
            pieces.append(_piece(text, len(pieces), window))
            window = _tail(text, window, min(overlap, size - span.tokens))
            tokens = sum(s.tokens for s in window)
        window.append(span)
        tokens += span.tokens
    if window:
        pieces.append(_piece(text, len(pieces), window))
    return pieces


def _piece(text: str, position: int, window: list[_Span]) -> Piece:
    start, end = window[0].start, window[-1].end
    body = text[start:end]
    return Piece(position, body, count_tokens(body), start, end)


def _units(text: str, size: int) -> Iterator[_Span]:
    """Sentences, or the words of a sentence longer than `size`, or runs of `size` tokens of a
    word longer than `size`."""
    for boundary in sentencex.get_sentence_boundaries(_LANGUAGE, text):
        sentence = _measure(text, boundary["start_index"], boundary["end_index"], _LEVEL_SENTENCE)
        if sentence is None:
            continue
        if sentence.tokens <= size:
            yield sentence
            continue
        for word in _finer(text, sentence):
            if word.tokens <= size:
                yield word
                continue
            parts = list(_finer(text, word))
            for i in range(0, len(parts), size):
                run = parts[i : i + size]
                yield _Span(run[0].start, run[-1].end, len(run), _LEVEL_WORD)


def _measure(text: str, start: int, end: int, level: int) -> _Span | None:
    segment = text[start:end]
    stripped = segment.strip()
    if not stripped:
        return None
    start += len(segment) - len(segment.lstrip())
    return _Span(start, start + len(stripped), count_tokens(stripped), level)


def _finer(text: str, span: _Span) -> Iterator[_Span]:
    """A sentence's words, or a word's tokens."""
    if span.level == _LEVEL_SENTENCE:
        for match in _WORD.finditer(text, span.start, span.end):
            yield _Span(match.start(), match.end(), count_tokens(match[0]), _LEVEL_WORD)
    elif span.level == _LEVEL_WORD:
        for match in TOKEN.finditer(text, span.start, span.end):
            yield _Span(match.start(), match.end(), 1, _LEVEL_TOKEN)


def _tail(text: str, window: list[_Span], budget: int) -> list[_Span]:
    """The trailing spans of `window` that fit in `budget` tokens; when not even the last one
    fits, the trailing parts of the last one."""
    kept: list[_Span] = []
    used = 0
    for span in reversed(window):
        if used + span.tokens > budget:
            break
        kept.append(span)
        used += span.tokens
    if not kept and budget > 0 and window:
        return _tail(text, list(_finer(text, window[-1])), budget)
    kept.reverse()
    return kept
