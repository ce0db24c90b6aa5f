"""The scorers' registry: specs checked at their paths, stored canonical, built guarded;
and every scorer on the record of an experiment's real runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import override_settings

from agentbuilder.errors import Invalid
from agents.access.permissions import Action, grant
from agents.evals import runner
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.scorers.base import Expected, Observed, Score
from agents.evals.scorers.judge import Judge
from agents.evals.scorers.registry import (
    SCORER_NAMES,
    Guarded,
    scorers_build,
    scorers_check,
)
from agents.evals.services import cases_add, dataset_create
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, ExperimentResult, LLMModel
from tests.factories import UserFactory

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


# ---------------------------------------------------------------- on an experiment's runs


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.usefixtures("reseed_after_module")
def test_every_scorer_reads_the_record_of_an_experiment_s_run(
    make_agent: Callable[..., Agent], env: Any
) -> None:
    # The cases' runs run in the process's runner threads, which see committed rows only.
    calc, member = make_agent("calc"), UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(member, action, env)
    dataset = dataset_create(user=member, environment=env, name="all", agent_type="tool")
    answer = "The result of multiply(12, 11) is 132."
    call = {"name": "multiply", "arguments": {"a": 12, "b": 11}}
    cases_add(
        user=member,
        dataset=dataset,
        cases=[
            {
                "input": "What is 12 times 11?",
                "expected": {
                    "output": answer,
                    "contains": ["132"],
                    "notContains": ["error"],
                    "regex": r"\b132\.$",
                    "outputSchema": {"type": "string", "minLength": 1},
                    "toolCalls": [call],
                    "toolCallsOrder": "exact",
                },
            },
            {"input": "Hello there", "expected": {"toolCalls": [], "notContains": ["132"]}},
        ],
    )
    scorers: list[Any] = [
        *("exact", "contains", "regex", "json_schema", "trajectory", "tool_args"),
        "no_tool_calls",
        {"name": "max_latency_ms", "max": 600_000},  # a bound no run here comes near
        {"name": "max_cost_usd", "max": 1},
        {"name": "judge", "model": "local.demo-v1", "rubric": "Gives the product."},
    ]
    spec = ExperimentSpec(version="latest", scorers=scorers)

    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )
    runner.experiment_run_here(experiment)

    first, second = ExperimentResult.objects.filter(experiment=experiment).order_by("position")
    passed = {name: s["passed"] for name, s in first.scores.items()}
    assert passed == {
        **dict.fromkeys(("exact", "contains", "regex", "json_schema", "trajectory"), True),
        **dict.fromkeys(("tool_args", "max_latency_ms", "judge"), True),
        "no_tool_calls": False,
        "max_cost_usd": True,  # the offline model is free
    }
    assert first.scores["judge"]["usage"]["total_tokens"] > 0
    experiment.refresh_from_db()
    judged = experiment.summary["judgeTokensUsage"]["total_tokens"]
    assert judged == sum(r.scores["judge"]["usage"]["total_tokens"] for r in (first, second))
    assert set(second.scores) == {
        "contains", "trajectory", "no_tool_calls", "max_latency_ms", "max_cost_usd", "judge",
    }  # fmt: skip
    assert second.scores["trajectory"]["passed"]
    assert second.scores["no_tool_calls"]["passed"]
    assert not second.scores["judge"]["passed"]  # "You said: Hello there" gives no product
