"""`regex`: `expected.regex` is found in the answer (a search, not a full match: anchor it
with `\\A`, `^` or `$` to ask for more).

RE2 runs in time linear in the answer, whatever the pattern: no pattern written into a
dataset can make an experiment backtrack for hours. The pattern was checked to compile
when its case was saved; one that does not (RE2 upgraded, a row written another way)
fails the case with its reason rather than the experiment.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import re2

from agents.evals.scorers.base import Expected, Observed, Score, shown


@dataclass(frozen=True)
class Regex:
    name: str = "regex"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        if expected.regex is None:
            return None
        try:
            pattern = _compiled(expected.regex)
        except re2.error as exc:
            return Score(0.0, False, f"the case's regex does not compile (RE2): {_message(exc)}")
        found = pattern.search(observed.answer)
        if found is None:
            return Score(0.0, False, f"no match for {shown(expected.regex)}")
        return Score(1.0, True, f"matched {shown(found.group(0))} at {found.start()}")


@functools.lru_cache(maxsize=256)  # a dataset's cases often share their pattern
def _compiled(pattern: str) -> re2._Regexp:
    return re2.compile(pattern)


def _message(exc: re2.error) -> str:
    message = exc.args[0] if exc.args else exc
    return message.decode(errors="replace") if isinstance(message, bytes) else str(message)
