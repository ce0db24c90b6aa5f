"""The scorers an imported promptfoo configuration runs with, and their options
(docs/api.md#importing-a-promptfoo-configuration).

A case's fields are per case; a scorer and its options are the experiment's, for every
case. So a threshold (`latency`, `cost`) or a rubric (`llm-rubric`) that differs between
tests cannot carry over as it is: the strictest threshold is kept, a rubric only when every
test has the same one, and a warning says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.evals.promptfoo.assertions import APPROXIMATED, CaseExpectation, Warn

# The scorers' options (agents.evals.scorers.registry): one place to follow them.
IGNORE_CASE = "ignoreCase"
MAX = "max"
LEAST_PASSING = "passAt"


def _uses(key: str) -> Callable[[list[CaseExpectation]], bool]:
    return lambda cases: any(key in e.expected for e in cases)


def _simple(name: str, key: str) -> ScorerSpec:
    def spec(cases: list[CaseExpectation], judge: str | None, warn: Warn) -> dict[str, Any] | None:
        return {"name": name} if _uses(key)(cases) else None

    return ScorerSpec(spec)


def _contains_spec(
    cases: list[CaseExpectation], judge: str | None, warn: Warn
) -> dict[str, Any] | None:
    kinds = [kind for e in cases for kind in e.ignore_case]
    if not kinds:
        return None
    if all(ignore for ignore, _ in kinds):
        return {"name": "contains", IGNORE_CASE: True}
    if any(ignore for ignore, _ in kinds):
        first = next(loc for ignore, loc in kinds if ignore)
        warn(
            first,
            "imported case-sensitive: other tests' contains are, and the `contains` scorer "
            "matches one way for every case",
            APPROXIMATED,
        )
    return {"name": "contains"}


def _tool_args_spec(
    cases: list[CaseExpectation], judge: str | None, warn: Warn
) -> dict[str, Any] | None:
    calls = [c for e in cases for c in e.expected.get("toolCalls", [])]
    return {"name": "tool_args"} if any("arguments" in c for c in calls) else None


def _bound(name: str, attribute: str) -> ScorerSpec:
    def spec(cases: list[CaseExpectation], judge: str | None, warn: Warn) -> dict[str, Any] | None:
        bounds = [getattr(e, attribute) for e in cases]
        given = [b for b in bounds if b is not None]
        if not given:
            return None
        strictest = min(given, key=lambda b: b[0])
        if len({b[0] for b in given}) > 1 or len(given) < len(bounds):
            warn(
                strictest[1],
                f"imported as `{name}` {strictest[0]:g} for every case: a scorer's bound is "
                "the experiment's, and "
                + ("the tests' differ" if len(given) == len(bounds) else "other tests have none"),
                APPROXIMATED,
            )
        value = int(strictest[0]) if name == "max_latency_ms" else strictest[0]
        return {"name": name, MAX: value}

    return ScorerSpec(spec)


def _judge_spec(
    cases: list[CaseExpectation], judge: str | None, warn: Warn
) -> dict[str, Any] | None:
    rubrics = [e.rubric for e in cases]
    given = [r for r in rubrics if r is not None]
    if not given:
        return None
    if len({(r.text, r.pass_at) for r in given}) > 1 or len(given) < len(rubrics):
        for at in dict.fromkeys(r.loc for r in given):
            warn(
                at,
                "not imported: a judge's rubric is the experiment's, for every case, and not "
                "every test has this one; run such tests as their own experiment",
            )
        return None
    rubric = given[0]
    model = judge or catalog_model(rubric.grader)
    if model is None:
        warn(rubric.loc, "not imported: no grader model (options.provider); name a catalog model")
        return None
    spec = {"name": "judge", "model": model, "rubric": rubric.text}
    return spec if rubric.pass_at is None else {**spec, LEAST_PASSING: rubric.pass_at}


def catalog_model(provider: Any) -> str | None:
    """promptfoo's provider id as this catalog's model id, where one reads as the other:
    `openai:gpt-4o-mini` → `openai/gpt-4o-mini`, `bedrock:<model id>` → `<model id>`."""
    ident = provider.get("id") if isinstance(provider, dict) else provider
    if not isinstance(ident, str) or not ident:
        return None
    vendor, _, rest = ident.partition(":")
    for api in ("chat:", "responses:", "converse:", "completion:"):
        rest = rest.removeprefix(api)
    if vendor == "openai" and rest:
        return f"openai/{rest}"
    if vendor == "bedrock" and rest:
        return rest
    return ident


@dataclass(frozen=True)
class ScorerSpec:
    spec: Callable[[list[CaseExpectation], str | None, Warn], dict[str, Any] | None]


SCORER_ORDER = (
    _simple("exact", "output"),
    ScorerSpec(_contains_spec),
    _simple("regex", "regex"),
    _simple("json_schema", "outputSchema"),
    _simple("trajectory", "toolCalls"),
    ScorerSpec(_tool_args_spec),
    _bound("max_latency_ms", "max_latency_ms"),
    _bound("max_cost_usd", "max_cost_usd"),
    ScorerSpec(_judge_spec),
)
