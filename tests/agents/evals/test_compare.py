"""Two experiments compared (agents/evals/compare.py): the database's classification of
each case (`compare_index`, which the admin's page orders and counts by) agrees with the
one made from every case's details (`experiments_compare`), in both directions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agents.evals import runner
from agents.evals.compare import compare_index, compare_rows, experiments_compare
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, Experiment
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG

pytestmark = [
    # The cases' runs run in the runner's threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

ADD_ONLY = {
    **CALCULATOR_CONFIG,
    "tools": [{"toolType": "function", "name": "add", "description": "Adds", "funcName": "add"}],
}


def ran(agent: Agent, version: int, dataset: Any, user: Any) -> Experiment:
    spec = ExperimentSpec(version=str(version), scorers=["exact", "contains"], repetitions=2)
    experiment = experiment_start(
        user=user, agent=agent, dataset=dataset, spec=spec, dispatch=False
    )
    runner.experiment_run_here(experiment)
    return experiment


def test_the_databases_classification_is_the_detailed_one(
    make_agent: Callable[..., Agent], admin_user: Any, env: Any
) -> None:
    calc = make_agent("calc")
    version_add(user=admin_user, agent=calc, config=ADD_ONLY)
    dataset = dataset_create(user=admin_user, environment=env, name="mixed", agent_type="tool")
    cases_add(
        user=admin_user,
        dataset=dataset,
        cases=[
            # v1 multiplies with its tool, v2 in words: a regression from 1 to 2.
            {"input": "What is 12 times 11?",
             "expected": {"output": "The result of multiply(12, 11) is 132."}},
            {"input": "What is 2 plus 2?", "expected": {"contains": ["4"]}},  # changed
            {"input": "Hello there"},  # no scorer applies: the same, or changed in words
        ],
    )  # fmt: skip
    one, two = ran(calc, 1, dataset, admin_user), ran(calc, 2, dataset, admin_user)

    for a, b in ((one, two), (two, one)):
        detailed = experiments_compare(a, b).rows
        indexed = compare_index(a, b)
        assert [(str(i.case_id), i.change) for i in indexed] == [
            (r.case_id, r.change) for r in detailed
        ]
    assert [i.change for i in compare_index(one, two)][:2] == ["regression", "changed"]
    assert next(i.change for i in compare_index(two, one)) == "improvement"
    [row] = compare_rows(one, two, [compare_index(one, two)[0].case_id])
    assert row.a is not None
    assert row.a.passed is True
