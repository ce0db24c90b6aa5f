"""`json_schema`: the run's output is valid against `expected.outputSchema`.

The output is a structured output as it is, else the answer parsed as JSON (in a code
fence too), else the answer as a string, so `{"type": "string", "maxLength": 280}` checks
a plain answer. Validated by agents.json_schemas, which resolves no `$ref` outside the
schema: a case cannot make the server fetch an address.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.evals.scorers.base import Expected, Observed, Score, output_value
from agents.json_schemas import SchemaRefused, errors

LISTED = 3  # violations named in a reason


@dataclass(frozen=True)
class JsonSchema:
    name: str = "json_schema"

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        if expected.output_schema is None:
            return None
        _, value = output_value(observed)
        try:
            found = errors(value, expected.output_schema)
        except SchemaRefused as exc:
            where = f" at {exc.where}" if exc.path else ""
            return Score(0.0, False, f"the case's schema is refused{where}: {exc.message}")
        if not found:
            return Score(1.0, True, "valid against the schema")
        listed = "; ".join(f"at {e.json_path}: {_cut(e.message)}" for e in found[:LISTED])
        more = f" (and {len(found) - LISTED} more)" if len(found) > LISTED else ""
        count = f"{len(found)} violation" + ("s" if len(found) > 1 else "")
        return Score(0.0, False, f"{count}: {listed}{more}")


def _cut(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"
