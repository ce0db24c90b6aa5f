"""A promptfoo configuration into a dataset, through the service and `manage.py agents
import-promptfoo`: the dataset made or added to as one revision, all or nothing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agentbuilder.errors import Invalid
from agents.access.permissions import Action, grant
from agents.evals.imports import promptfoo_dataset_import
from agents.evals.promptfoo import promptfoo_import
from agents.evals.scorers.registry import scorers_check
from agents.evals.selectors import dataset_cases
from agents.evals.services import dataset_create
from agents.models import Dataset, Environment

pytestmark = pytest.mark.django_db

CONFIG = """
prompts: ['Answer briefly: {{question}}']
defaultTest:
  assert:
    - {type: latency, threshold: 5000}
tests:
  - description: capital
    vars: {question: 'What is the capital of France?'}
    assert:
      - {type: icontains, value: paris}
  - vars: {question: [Say hi, Say hello]}
    assert:
      - {type: python, value: len(output) < 9}
"""


def command(*args: Any) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("agents", "import-promptfoo", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_a_new_dataset_is_made_with_the_tests_as_one_revision(env: Environment, owner: Any) -> None:
    done = promptfoo_dataset_import(
        user=owner, environment=env, dataset_name="support", config=CONFIG, agent_type="rag"
    )
    assert done.created
    assert done.revision == 1
    assert (done.dataset.name, done.dataset.agent_type) == ("support", "rag")
    cases = list(dataset_cases(done.dataset))
    assert len(cases) == 3
    assert cases[0].input == {
        "messages": [{"role": "user", "content": "Answer briefly: What is the capital of France?"}]
    }
    assert cases[0].expected == {"contains": ["paris"]}
    assert cases[0].metadata["description"] == "capital"
    assert done.imported.scorers == [
        {"name": "contains", "ignoreCase": True},
        {"name": "max_latency_ms", "max": 5000},
    ]
    again = promptfoo_dataset_import(
        user=owner, environment=env, dataset_name="SUPPORT", config=CONFIG
    )
    assert not again.created
    assert again.revision == 2
    assert dataset_cases(again.dataset).count() == 6


def test_nothing_is_written_when_a_case_does_not_fit_the_dataset(
    env: Environment, owner: Any
) -> None:
    bad = CONFIG + "  - vars: {question: x}\n    assert: [{type: is-json, value: {type: 7}}]\n"
    with pytest.raises(Invalid) as raised:
        promptfoo_dataset_import(
            user=owner, environment=env, dataset_name="support", config=bad, agent_type="tool"
        )
    assert raised.value.errors[0].loc[:3] == ("config", "tests", 2)
    assert not Dataset.objects.filter(name="support").exists()


def test_the_agent_type_is_a_new_datasets_and_must_match_an_existing_one(
    env: Environment, owner: Any
) -> None:
    with pytest.raises(Invalid) as raised:
        promptfoo_dataset_import(user=owner, environment=env, dataset_name="x", config=CONFIG)
    assert raised.value.errors[0].loc == ("agentType",)
    dataset_create(user=owner, environment=env, name="x", agent_type="task")
    with pytest.raises(Invalid) as raised:
        promptfoo_dataset_import(
            user=owner, environment=env, dataset_name="x", config=CONFIG, agent_type="tool"
        )
    assert "holds cases of task agents" in raised.value.errors[0].msg


def test_the_command_imports_and_prints_scorers_and_warnings(
    env: Environment, owner: Any, config: Path
) -> None:
    out, err = command(config, "--dataset", "support", "--agent-type", "tool", "--user", "owner")
    assert "dataset 'support' (tool agents) made, with 3 cases: revision 1" in out
    assert 'scorers: [{"name": "contains", "ignoreCase": true}' in out
    assert f"{config}: config.tests.1.assert.0: not imported: promptfoo's `python`" in err
    out, _ = command(config, "--dataset", "support", "--user", "owner", "--dry-run")
    assert "dry run: 3 cases; nothing was written" in out
    assert Dataset.objects.get(name="support").revision == 1


def test_the_command_refuses_at_the_configurations_path(
    env: Environment, owner: Any, stranger: Any, tmp_path: Path
) -> None:
    grant(stranger, Action.READ, env)
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("tests: file://tests.csv\n", encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        command(path, "--dataset", "d", "--agent-type", "tool", "--user", "owner")
    assert str(raised.value).startswith(f"nothing imported:\n{path}: config.tests: ")
    with pytest.raises(CommandError) as raised:
        command(tmp_path / "missing.yaml", "--dataset", "d", "--user", "owner")
    assert "No such file" in str(raised.value)
    with pytest.raises(CommandError) as raised:
        command(path, "--dataset", "d", "--agent-type", "tool", "--user", "stranger")
    assert "EDIT permission" in str(raised.value)
    assert not Dataset.objects.exists()


EVERY_SCORER = """
tests:
  - vars: {prompt: a}
    options: {provider: 'openai:gpt-4o-mini'}
    assert:
      - {type: equals, value: a}
      - {type: icontains, value: a}
      - {type: regex, value: a}
      - {type: is-json}
      - type: trajectory:tool-args-match
        value: {name: search, args: {q: a}}
      - {type: latency, threshold: 900.5}
      - {type: cost, threshold: 1}
      - {type: llm-rubric, value: is short, threshold: 0.7}
"""


def test_the_scorers_an_import_names_are_ones_experiments_take(env: Environment) -> None:
    scorers = promptfoo_import(EVERY_SCORER, agent_type="tool").scorers
    names = [s["name"] for s in scorers]
    assert names == [
        "exact",
        "contains",
        "regex",
        "json_schema",
        "trajectory",
        "tool_args",
        "max_latency_ms",
        "max_cost_usd",
        "judge",
    ]
    stored = scorers_check(scorers, loc=("body", "scorers"))
    assert [s["name"] for s in stored] == names
    by_name = {s["name"]: s for s in stored}
    assert by_name["contains"]["ignoreCase"] is True
    assert by_name["max_latency_ms"]["max"] == 900
    assert by_name["max_cost_usd"]["max"] == 1.0
    assert by_name["judge"]["model"] == "openai/gpt-4o-mini"
    assert by_name["judge"]["passAt"] == 0.7
