"""Experiments run (agents/evals/runner.py): every case through the run path as the
requester's `eval` run, scored, the progress counted, the summary written with the last
case; slots that died are taken over by the sweep."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agents.access.permissions import Action, grant
from agents.evals import runner
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, ExperimentResult, Run
from tests.factories import UserFactory

pytestmark = [
    # The cases' runs run in this process's runner threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


@pytest.fixture
def member(env: Any) -> Any:
    user = UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(user, action, env)
    return user


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


def test_an_experiment_runs_every_case_as_the_requesters_eval_run_and_scores_it(
    calc: Agent, member: Any, env: Any
) -> None:
    dataset = dataset_create(user=member, environment=env, name="arith", agent_type="tool")
    cases_add(
        user=member,
        dataset=dataset,
        cases=[
            {"input": "What is 12 times 11?", "expected": {"output": "132"}},
            {"input": "What is 2 plus 2?", "expected": {"output": "5"}},
        ],
    )
    spec = ExperimentSpec(version="latest", scorers=["exact"], repetitions=2, concurrency=2)

    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )
    runner.experiment_run_here(experiment)

    experiment.refresh_from_db()
    assert (experiment.status, experiment.done, experiment.total) == ("completed", 4, 4)
    results = list(ExperimentResult.objects.filter(experiment=experiment).order_by("position"))
    runs = Run.objects.filter(pk__in=[r.run_id for r in results])
    assert {(r.caller, r.protocol, r.status) for r in runs} == {(member, "eval", "completed")}
    assert len(runs) == 4
    print([(r.answer, r.scores) for r in results])
    assert experiment.summary is not None
