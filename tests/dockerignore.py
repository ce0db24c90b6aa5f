"""What a Docker build context holds under a .dockerignore, computed without Docker.

A port of moby/patternmatcher (ignorefile.ReadAll, New, MatchesOrParentMatches), which
BuildKit and the classic builder use. pathspec's gitwildmatch is not the same language: in
git a `*.pyc` with no slash matches at any depth and a `!` cannot bring back a file inside
an excluded directory; in Docker `*.pyc` matches at the context's root only and `!` can.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# Regular-expression characters that are literal in a Go filepath pattern.
_LITERAL = set(".+()|{}$")


def go_clean(path: str) -> str:
    """Go's filepath.Clean on a slash-separated path."""
    rooted = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(part)
    cleaned = "/".join(parts)
    if rooted:
        return "/" + cleaned
    return cleaned or "."


def go_dir(path: str) -> str:
    """Go's filepath.Dir: all but the last element, cleaned."""
    return go_clean(path[: path.rfind("/") + 1])


def read_patterns(text: str) -> list[str]:
    """The patterns of a .dockerignore, as ignorefile.ReadAll returns them."""
    patterns = []
    for number, raw in enumerate(text.splitlines()):
        line = raw.removeprefix("\ufeff") if number == 0 else raw
        if line.startswith("#"):
            continue
        pattern = line.strip()
        if not pattern:
            continue
        invert = pattern.startswith("!")
        if invert:
            pattern = pattern[1:].strip()
        if pattern:
            pattern = go_clean(pattern)
            if len(pattern) > 1 and pattern.startswith("/"):
                pattern = pattern[1:]
        patterns.append("!" + pattern if invert else pattern)
    return patterns


@dataclass(frozen=True)
class Pattern:
    text: str
    exclusion: bool
    match: Callable[[str], bool]


def compile_pattern(pattern: str) -> Pattern:
    """One pattern as patternmatcher.New cleans and compiles it; ValueError if malformed."""
    pattern = go_clean(pattern.strip())
    exclusion = pattern.startswith("!")
    if exclusion:
        if pattern == "!":
            raise ValueError('illegal exclusion pattern: "!"')
        pattern = pattern[1:]
    _check_syntax(pattern)
    return Pattern(pattern, exclusion, _matcher(pattern))


def _check_syntax(pattern: str) -> None:
    """Raise ValueError where Go's filepath.Match reports ErrBadPattern, as New checks."""
    bad = ValueError(f"syntax error in pattern {pattern!r}")

    def class_char(i: int) -> tuple[str, int]:
        if i >= len(pattern) or pattern[i] in "-]":
            raise bad
        if pattern[i] == "\\":
            i += 1
        if i + 1 >= len(pattern):  # the class must still be closed after this character
            raise bad
        return pattern[i], i + 1

    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if i + 1 == len(pattern):
                raise bad
            i += 2
        elif pattern[i] == "[":
            i += 1
            if pattern[i : i + 1] == "^":
                i += 1
            ranges = 0
            while not (pattern[i : i + 1] == "]" and ranges):
                low, i = class_char(i)
                high = low
                if pattern[i] == "-":
                    high, i = class_char(i + 1)
                if high < low:
                    raise bad
                ranges += 1
            i += 1
        else:
            i += 1


def _matcher(pattern: str) -> Callable[[str], bool]:
    regex, kind, i, first = "^", "exact", 0, True
    while i < len(pattern):
        ch = pattern[i]
        i += 1
        if ch == "*" and pattern[i : i + 1] == "*":
            i += 1
            if pattern[i : i + 1] == "/":  # `**/` is `**`
                i += 1
            if i == len(pattern):  # a trailing `**` matches everything below
                if kind == "exact":
                    kind = "prefix"
                else:
                    regex, kind = regex + ".*", "regexp"
            else:
                regex, kind = regex + "(.*/)?", "regexp"
            if first:
                kind = "suffix"
        elif ch == "*":
            regex, kind = regex + "[^/]*", "regexp"
        elif ch == "?":
            regex, kind = regex + "[^/]", "regexp"
        elif ch in _LITERAL:
            regex += "\\" + ch
        elif ch == "\\":
            if i < len(pattern):
                regex, kind = regex + "\\" + pattern[i], "regexp"
                i += 1
            else:
                regex += "\\\\"
        elif ch in "[]":
            regex, kind = regex + ch, "regexp"
        else:
            regex += ch
        first = False

    if kind == "exact":
        return lambda path: path == pattern
    if kind == "prefix":
        return lambda path: path.startswith(pattern[:-2])
    if kind == "suffix":
        suffix = pattern[2:]
        return lambda path: path.endswith(suffix) or (suffix.startswith("/") and path == suffix[1:])
    try:
        compiled = re.compile(regex + r"\Z")
    except re.error as exc:
        raise ValueError(f"bad pattern {pattern!r}: {exc}") from None
    return lambda path: compiled.match(path) is not None


def excluded(path: str, patterns: Iterable[Pattern]) -> bool:
    """Whether `path` (slash-separated, relative) stays out: the last pattern that matches
    it or one of its parent directories decides (MatchesOrParentMatches)."""
    matched = False
    parent = go_dir(path)
    parents = parent.split("/")
    for pattern in patterns:
        # An exclusion cannot change an unmatched path, nor an inclusion a matched one.
        if pattern.exclusion != matched:
            continue
        match = pattern.match(path)
        if not match and parent != ".":
            match = any(pattern.match("/".join(parents[: i + 1])) for i in range(len(parents)))
        if match:
            matched = not pattern.exclusion
    return matched


def build_context(dockerignore: str, paths: Iterable[str]) -> set[str]:
    """Which of `paths` (files, relative to the context's root) a build sends."""
    patterns = [compile_pattern(p) for p in read_patterns(dockerignore)]
    return {path for path in paths if not excluded(path, patterns)}


def files_under(root: Path, *, skip: Iterable[str] = ()) -> set[str]:
    """The files under `root` as relative paths, without the top-level directories `skip`."""
    files = set()
    for directory, dirs, names in os.walk(root):
        if Path(directory) == root:
            dirs[:] = [d for d in dirs if d not in set(skip)]
        files.update((Path(directory) / n).relative_to(root).as_posix() for n in names)
    return files
