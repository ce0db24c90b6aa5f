"""The scorers' registry: specs checked at their paths, stored canonical, built guarded."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from agentbuilder.errors import Invalid
from agents.evals.scorers.base import Expected, Observed, Score
from agents.evals.scorers.judge import Judge
from agents.evals.scorers.registry import (
    SCORER_NAMES,
    Guarded,
    scorers_build,
    scorers_check,
)
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import LLMModel

pytestmark = pytest.mark.django_db
LOC = ("body", "scorers")
REMOTE = "openai/gpt-4o-mini"
WITH_OPTIONS = ("judge", "max_latency_ms", "max_cost_usd")  # options without defaults


def refused(data: Any) -> dict[tuple[str | int, ...], str]:
    with pytest.raises(Invalid) as caught:
        scorers_check(data, loc=LOC)
    return {e.loc: e.msg for e in caught.value.errors}


def test_every_scorer_of_the_spec_is_known() -> None:
    assert set(SCORER_NAMES) == {
        "exact",
        "contains",
        "regex",
        "json_schema",
        "trajectory",
        "tool_args",
        "no_tool_calls",
        "source_recall",
        "max_latency_ms",
        "max_cost_usd",
        "judge",
    }


def test_specs_are_stored_canonical_with_their_defaults() -> None:
    specs = scorers_check(
        [
            "exact",
            {"name": "contains"},
            {"name": "trajectory"},
            {"name": "trajectory", "label": "strict", "mode": "exact"},
            {"name": "source_recall", "min": 0.5},
            {"name": "max_latency_ms", "max": 2000},
            {"name": "judge", "model": LOCAL_MODEL, "rubric": "Polite."},
        ],
        loc=LOC,
    )
    assert specs == [
        {"name": "exact"},
        {"name": "contains", "ignoreCase": False},
        {"name": "trajectory"},
        {"name": "trajectory", "label": "strict", "mode": "exact"},
        {"name": "source_recall", "min": 0.5},
        {"name": "max_latency_ms", "max": 2000},
        {"name": "judge", "model": LOCAL_MODEL, "rubric": "Polite.", "passAt": 0.5},
    ]
    # What was stored checks as itself: an experiment and a gate agree on equal scorers.
    assert scorers_check(specs, loc=LOC) == specs
    assert scorers_check(["contains"], loc=LOC) == scorers_check(
        [{"name": "contains", "ignore_case": False}], loc=LOC
    )


def test_unknown_names_are_refused_at_their_path_listing_the_known() -> None:
    errors = refused(["exact", "bleu", {"name": "rouge"}, {"rubric": "x"}, 3])
    assert errors[(*LOC, 1)].startswith("unknown scorer 'bleu'; known: exact, contains, regex")
    assert errors[(*LOC, 2, "name")].startswith("unknown scorer 'rouge'")
    assert errors[(*LOC, 3, "name")].startswith("required")
    assert errors[(*LOC, 4)].startswith("a scorer: its name")
    assert len(errors) == 4


def test_bad_and_unknown_options_are_refused_at_their_path() -> None:
    errors = refused(
        [
            {"name": "max_latency_ms", "max": 0},
            {"name": "max_cost_usd"},
            {"name": "contains", "ignoreCase": "yes", "caseless": True},
            {"name": "exact", "strict": True},
            {"name": "trajectory", "mode": "sorted"},
        ]
    )
    assert set(errors) == {
        (*LOC, 0, "max"),
        (*LOC, 1, "max"),
        (*LOC, 2, "ignoreCase"),
        (*LOC, 2, "caseless"),
        (*LOC, 3, "strict"),
        (*LOC, 4, "mode"),
    }
    assert errors[(*LOC, 3, "strict")] == "unknown field 'strict'"


def test_a_scorer_twice_needs_a_label() -> None:
    errors = refused(["exact", "exact"])
    assert errors == {(*LOC, 1): "a second scorer keyed `exact`: give one a `label`"}
    twice = [
        {"name": "judge", "model": LOCAL_MODEL, "rubric": "Polite.", "label": "polite"},
        {"name": "judge", "model": LOCAL_MODEL, "rubric": "Short.", "label": "short"},
    ]
    assert [s["label"] for s in scorers_check(twice, loc=LOC)] == ["polite", "short"]
    assert (*LOC, 1) in refused([{"name": "exact", "label": "x"}, {"name": "regex", "label": "x"}])
    assert (*LOC, 0, "label") in refused([{"name": "exact", "label": "not ok!"}])


@pytest.mark.parametrize("data", [[], None, "exact", {"name": "exact"}])
def test_a_non_empty_list_is_required(data: Any) -> None:
    assert list(refused(data)) == [LOC]


def test_at_most_20_scorers() -> None:
    specs = [{"name": "exact", "label": f"e{i}"} for i in range(21)]
    assert list(refused(specs)) == [LOC]


def test_a_judge_needs_an_enabled_catalog_model() -> None:
    errors = refused([{"name": "judge", "model": "gpt-9", "rubric": "Polite."}])
    assert errors == {(*LOC, 0, "model"): "no enabled model `gpt-9` in the catalog"}
    LLMModel.objects.filter(pk=REMOTE).update(enabled=False)
    assert (*LOC, 0, "model") in refused([{"name": "judge", "model": REMOTE, "rubric": "x"}])


# ---------------------------------------------------------------- built


def test_built_scorers_are_keyed_by_label_or_name() -> None:
    specs = scorers_check(["exact", {"name": "contains", "label": "keywords"}], loc=LOC)
    assert [s.name for s in scorers_build(specs)] == ["exact", "keywords"]


def test_every_scorer_fails_a_run_that_did_not_complete() -> None:
    specs = scorers_check(
        [
            {"name": name}
            for name in SCORER_NAMES
            if name not in ("judge", "max_latency_ms", "max_cost_usd")
        ]
        + [
            {"name": "max_latency_ms", "max": 10},
            {"name": "max_cost_usd", "max": 1},
            {"name": "judge", "model": LOCAL_MODEL, "rubric": "Polite."},
        ],
        loc=LOC,
    )
    failed = Observed("", failed="failed: provider_error")
    scores = [scorer(Expected(), failed) for scorer in scorers_build(specs)]
    assert len(scores) == len(SCORER_NAMES)
    assert set(scores) == {Score(0.0, False, "the run did not complete: failed: provider_error")}


def test_a_scorer_that_raises_fails_its_case_not_the_experiment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        name = "broken"

        def __call__(self, expected: Expected, observed: Observed) -> Score | None:
            raise KeyError("bug")

    score = Guarded(Broken())(Expected(), Observed("x"))
    assert score == Score(0.0, False, "the scorer failed: KeyError")
    assert "scorer broken failed" in caplog.text


def test_a_judge_is_routed_as_runs_are() -> None:
    spec = scorers_check([{"name": "judge", "model": REMOTE, "rubric": "Polite."}], loc=LOC)
    with override_settings(LLM_OFFLINE=False):
        online = scorers_build(spec)[0]
    assert isinstance(online, Guarded)
    assert isinstance(online.scorer, Judge)
    assert (online.scorer.provider, online.scorer.model) == ("openai", REMOTE)
    with override_settings(LLM_OFFLINE=True):
        offline = scorers_build(spec)[0]
    assert isinstance(offline, Guarded)
    assert isinstance(offline.scorer, Judge)
    assert (offline.scorer.provider, offline.scorer.model) == ("local", LOCAL_MODEL)
    score = offline(Expected(output="Thank you, polite."), Observed("Polite, thank you."))
    assert score is not None
    assert score.passed


def test_a_judge_whose_model_left_the_catalog_fails_its_cases() -> None:
    spec = scorers_check([{"name": "judge", "model": REMOTE, "rubric": "Polite."}], loc=LOC)
    LLMModel.objects.filter(pk=REMOTE).update(enabled=False)
    score = scorers_build(spec)[0](Expected(), Observed("Hello"))
    assert score == Score(0.0, False, f"the judge's model `{REMOTE}` is not in the catalog")
