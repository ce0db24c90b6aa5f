"""Payloads hidden from the prompt-attack rules: base64 and hex runs, Unicode tag
characters (invisible ASCII), rot13 and text written backwards."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]?){12,}")
# Tag characters mirror printable ASCII and render as nothing: text a reader cannot see
# and a model reads.
_TAGS = re.compile("[\U000e0020-\U000e007e]{4,}")
_URLSAFE = str.maketrans("-_", "+/")
_NO_SEPARATORS = str.maketrans("", "", " :")
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
# Read through rot13, English turns to gibberish and a rot13 payload to English.
_ENGLISH = frozenset({"the", "you", "your", "all", "and", "to", "of", "is", "are", "my", "prompt"})
_WORD = re.compile(r"[a-z]+")
# A window holds a handful of encoded runs at most; more is not worth decoding.
MAX_RUNS = 8


@dataclass(frozen=True)
class Run:
    start: int
    end: int
    encoding: str
    decoded: str


def rot13(text: str) -> str:
    return text.translate(_ROT13)


def backwards(text: str) -> str:
    return text[::-1]


def reads_as_english(folded: str) -> bool:
    return len(_ENGLISH.intersection(_WORD.findall(folded))) >= 2


def decoded_runs(text: str) -> Iterator[Run]:
    """The base64 (standard or URL-safe) and hex runs of `text` that decode to readable text."""
    matches = [(m, "base64") for m in _BASE64.finditer(text)]
    matches += [(m, "hex") for m in _HEX.finditer(text)]
    if not text.isascii():
        matches += [(m, "unicode tags") for m in _TAGS.finditer(text)]
    for match, encoding in matches[:MAX_RUNS]:
        run = match.group().rstrip(" :")
        decoded = _decode(run, encoding)
        if decoded is not None:
            yield Run(match.start(), match.start() + len(run), encoding, decoded)


def _decode(run: str, encoding: str) -> str | None:
    if encoding == "unicode tags":
        return "".join(chr(ord(char) - 0xE0000) for char in run)
    try:
        if encoding == "base64":
            body = run.rstrip("=").translate(_URLSAFE)
            raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
        else:
            raw = bytes.fromhex(run.translate(_NO_SEPARATORS))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    # Identifiers and hashes decode to bytes, rarely to readable text.
    readable = sum(char.isprintable() or char.isspace() for char in text)
    return text if text and readable >= 0.95 * len(text) else None
