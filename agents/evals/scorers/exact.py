"""`exact`: the run's output is the expected one.

An expected string is compared with the answer's text, each without surrounding
whitespace (one holding a JSON object or list, as JSON too); any other expected value (an
object, a list, a number, a boolean) with the run's output as JSON: a structured output,
or the answer parsed as JSON, so `{"a": 1}` written with other spacing or key order is
still equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agents.evals.scorers.base import Expected, Observed, Score, json_equal, output_value, shown


@dataclass(frozen=True)
class Exact:
    name: str = "exact"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        want = expected.output
        if want is None:
            return None
        if isinstance(want, str):
            got = observed.answer.strip()
            same = got == want.strip() or _same_json_text(want, observed)
            return _verdict(same, want.strip(), got)
        parsed, value = output_value(observed)
        if not parsed:
            return Score(
                0.0, False, f"expected the JSON value {shown(want)}; the answer is not JSON"
            )
        return _verdict(json_equal(value, want), want, value)


def _same_json_text(want: str, observed: Observed) -> bool:
    # An object or a list written as text (a CSV cell, a hand-written case) is still JSON:
    # `{"a": 1}` expected is `{"a":1}` answered.
    try:
        value = json.loads(want)
    except (ValueError, RecursionError):
        return False
    if not isinstance(value, dict | list):
        return False
    parsed, got = output_value(observed)
    return parsed and json_equal(got, value)


def _verdict(same: bool, want: object, got: object) -> Score:
    if same:
        return Score(1.0, True, "equal to the expected output")
    return Score(0.0, False, f"expected {shown(want)}, got {shown(got)}")
