"""The scorers by name (docs/api.md#scorers): their specs checked as an experiment or a
gate names them, and built from what was stored.

A spec is a name (`"exact"`) or an object `{"name": ..., <options>}`, options camelCase;
`label` names one scorer used twice (two judges with two rubrics) and is then its key in
scores, summaries and a gate's thresholds. The stored spec is canonical (every option,
defaults included), so two experiments that score alike have equal specs
(agents.evals.experiments.scorers_key).

Every built scorer scores a run that did not complete 0, with the run's reason
(base.failed_run), and a scorer that raises scores the case 0 rather than stopping the
experiment. This module alone reads a table: the judge's model in the catalog.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from agentbuilder.errors import ErrorItem, Invalid, Loc
from agentbuilder.wire import CamelModel, parse
from agents.evals.scorers.base import Expected, Observed, Score, Scorer, failed_run
from agents.evals.scorers.bounds import MaxCostOptions, MaxCostUsd, MaxLatencyMs, MaxLatencyOptions
from agents.evals.scorers.contains import Contains, ContainsOptions
from agents.evals.scorers.exact import Exact
from agents.evals.scorers.json_schema import JsonSchema
from agents.evals.scorers.judge import Judge, JudgeOptions
from agents.evals.scorers.no_tool_calls import NoToolCalls
from agents.evals.scorers.regex import Regex
from agents.evals.scorers.source_recall import SourceRecall, SourceRecallOptions
from agents.evals.scorers.tool_args import ToolArgs
from agents.evals.scorers.trajectory import Trajectory, TrajectoryOptions
from agents.models import LLMModel
from agents.runs.spec import model_route

logger = logging.getLogger(__name__)

MAX_SCORERS = 20
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class NoOptions(CamelModel):
    pass


@dataclass(frozen=True)
class Kind:
    options: type[BaseModel]
    build: Callable[[str, Any], Scorer]  # (its name or label, its options) → the scorer


def _judge(name: str, options: JudgeOptions) -> Scorer:
    provider = _catalog_provider(options.model)
    if provider is None:
        return Unavailable(name, f"the judge's model `{options.model}` is not in the catalog")
    route, served = model_route(options.model, provider)
    return Judge(route, served, options.rubric, options.pass_at, name)


KINDS: dict[str, Kind] = {
    "exact": Kind(NoOptions, lambda name, _: Exact(name)),
    "contains": Kind(ContainsOptions, lambda name, o: Contains(name, o.ignore_case)),
    "regex": Kind(NoOptions, lambda name, _: Regex(name)),
    "json_schema": Kind(NoOptions, lambda name, _: JsonSchema(name)),
    "trajectory": Kind(TrajectoryOptions, lambda name, o: Trajectory(name, o.mode)),
    "tool_args": Kind(NoOptions, lambda name, _: ToolArgs(name)),
    "no_tool_calls": Kind(NoOptions, lambda name, _: NoToolCalls(name)),
    "source_recall": Kind(SourceRecallOptions, lambda name, o: SourceRecall(name, o.min)),
    "max_latency_ms": Kind(MaxLatencyOptions, lambda name, o: MaxLatencyMs(o.max, name)),
    "max_cost_usd": Kind(MaxCostOptions, lambda name, o: MaxCostUsd(o.max, name)),
    "judge": Kind(JudgeOptions, _judge),
}
SCORER_NAMES = tuple(KINDS)
KNOWN = ", ".join(SCORER_NAMES)


def scorers_check(data: Any, *, loc: Loc) -> list[dict[str, Any]]:
    """`data`, a list of scorer specs, as stored. Raises Invalid at each bad spec's path
    under `loc` (an unknown name, a bad or unknown option, a repeated name or label, a
    judge's model the catalog does not have enabled)."""
    if not isinstance(data, list) or not data:
        raise Invalid.at(loc, f"a non-empty list of scorers (known: {KNOWN})")
    if len(data) > MAX_SCORERS:
        raise Invalid.at(loc, f"at most {MAX_SCORERS} scorers")
    problems: list[ErrorItem] = []
    specs: list[dict[str, Any]] = []
    keys: set[str] = set()
    for i, item in enumerate(data):
        try:
            spec = _spec_check(item, (*loc, i))
        except Invalid as exc:
            problems.extend(exc.errors)
            continue
        key = spec.get("label", spec["name"])
        if key in keys:
            problems.append(
                ErrorItem((*loc, i), f"a second scorer keyed `{key}`: give one a `label`")
            )
        keys.add(key)
        specs.append(spec)
    if problems:
        raise Invalid(problems)
    return specs


def _spec_check(item: Any, loc: Loc) -> dict[str, Any]:
    if isinstance(item, str):
        item = {"name": item}
        name_at: Loc = loc
    elif isinstance(item, dict):
        name_at = (*loc, "name")
    else:
        raise Invalid.at(loc, 'a scorer: its name, or {"name": ..., <options>}')
    name = item.get("name")
    if name not in KINDS:
        if name is None:
            raise Invalid.at(name_at, f"required: the scorer's name ({KNOWN})", "missing")
        raise Invalid.at(name_at, f"unknown scorer {name!r}; known: {KNOWN}")
    spec: dict[str, Any] = {"name": name}
    label = item.get("label")
    if label is not None:
        if not isinstance(label, str) or not LABEL.fullmatch(label):
            raise Invalid.at(
                (*loc, "label"),
                "letters, digits, `_`, `.` and `-`, at most 64, first a letter or digit",
            )
        spec["label"] = label
    given = {k: v for k, v in item.items() if k not in ("name", "label")}
    options = parse(KINDS[name].options, given, *loc)
    spec.update(options.model_dump(mode="json", by_alias=True, exclude_none=True))
    if isinstance(options, JudgeOptions) and _catalog_provider(options.model) is None:
        raise Invalid.at((*loc, "model"), f"no enabled model `{options.model}` in the catalog")
    return spec


def _catalog_provider(model_id: str) -> str | None:
    provider = LLMModel.objects.filter(pk=model_id, enabled=True).values_list("provider", flat=True)
    return cast("str | None", provider.first())


def scorers_build(specs: list[dict[str, Any]]) -> list[Scorer]:
    """The scorers of stored (checked) specs, each keyed by its label or name."""
    built: list[Scorer] = []
    for spec in specs:
        kind = KINDS[spec["name"]]
        given = {k: v for k, v in spec.items() if k not in ("name", "label")}
        options = kind.options.model_validate(given)
        built.append(Guarded(kind.build(spec.get("label", spec["name"]), options)))
    return built


@dataclass(frozen=True)
class Guarded:
    """A scorer that scores a run that did not complete 0, and its own failure 0."""

    scorer: Scorer

    @property
    def name(self) -> str:
        return self.scorer.name

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        failed = failed_run(observed)
        if failed is not None:
            return failed
        try:
            return self.scorer(expected, observed)
        except Exception as exc:  # a scorer's defect fails its case, not the experiment
            logger.exception("scorer %s failed", self.name)
            return Score(0.0, False, f"the scorer failed: {type(exc).__name__}")


@dataclass(frozen=True)
class Unavailable:
    """A scorer that cannot score (its judge's model left the catalog after it was
    checked): every case fails with why."""

    name: str
    reason: str

    def __call__(self, expected: Expected, observed: Observed) -> Score | None:
        return Score(0.0, False, self.reason)
