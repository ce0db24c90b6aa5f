"""`manage.py agents eval` (agents/management/commands/_eval.py): an experiment for a CI
pipeline, run in the command's process, its JUnit XML report, and exit status 1 on a
missed threshold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from django.core.management import CommandError, call_command

from agents.evals.gates import gate_set
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, Experiment
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG

pytestmark = [
    # The cases' runs run in the runner's threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

ANSWER = "The result of multiply(12, 11) is 132."
ADD_ONLY = {
    **CALCULATOR_CONFIG,
    "tools": [{"toolType": "function", "name": "add", "description": "Adds", "funcName": "add"}],
}


@pytest.fixture
def calc(make_agent: Callable[..., Agent], admin_user: Any, env: Any) -> Agent:
    agent = make_agent("calc")
    version_add(user=admin_user, agent=agent, config=ADD_ONLY)  # v2 fails the dataset
    dataset = dataset_create(user=admin_user, environment=env, name="arith", agent_type="tool")
    cases_add(
        user=admin_user,
        dataset=dataset,
        cases=[
            {"input": "What is 12 times 11?", "expected": {"output": ANSWER}},
            {"input": "What is 3 times 5?", "expected": {"contains": ["15"]}},
        ],
    )
    return agent


def test_a_version_that_reaches_its_thresholds_passes_with_a_junit_report(
    calc: Agent, admin_user: Any, tmp_path: Path
) -> None:
    report = tmp_path / "eval.xml"

    call_command(
        "agents", "eval", "calc@1", "--dataset", "arith", "--scorers", '["exact"]',
        "--min", "exact=1", "--junit", str(report),
    )  # fmt: skip

    suite = ElementTree.parse(report).getroot().find("testsuite")  # noqa: S314 (our own report)
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")
    assert [c.get("name") for c in suite.iter("testcase")] == ["case 1", "case 2"]
    assert Experiment.objects.get().requester == admin_user


def test_a_version_that_misses_a_gates_threshold_exits_1_and_reports_the_failing_case(
    calc: Agent, admin_user: Any, tmp_path: Path
) -> None:
    dataset = calc.environment.datasets.get()
    gate_set(
        user=admin_user, agent=calc, name="prod", dataset=dataset, scorers=["exact"],
        thresholds={"exact": 0.9},
    )  # fmt: skip
    report = tmp_path / "eval.xml"

    with pytest.raises(CommandError, match=r"exact mean 0\.0 < 0\.9") as raised:
        call_command("agents", "eval", "calc@2", "--gate", "prod", "--junit", str(report))

    assert raised.value.returncode == 1
    suite = ElementTree.parse(report).getroot().find("testsuite")  # noqa: S314 (our own report)
    assert suite is not None
    failures = [c.find("failure") for c in suite.iter("testcase")]
    assert failures[0] is not None
    assert "exact" in (failures[0].get("message") or "")


def test_bad_options_run_nothing(calc: Agent) -> None:
    with pytest.raises(CommandError, match="scorers"):
        call_command("agents", "eval", "calc@1", "--dataset", "arith", "--scorers", '["nope"]')
    with pytest.raises(CommandError, match="no dataset"):
        call_command("agents", "eval", "calc@1", "--dataset", "none", "--scorers", '["exact"]')
    with pytest.raises(CommandError, match="version"):
        call_command("agents", "eval", "calc@9", "--dataset", "arith", "--scorers", '["exact"]')
    assert Experiment.objects.count() == 0
