"""What the experiments' admin tests share: an agent on the fake OpenAI-compatible server
(whose answers a test scripts, one per case in order with one slot), a dataset of
arithmetic questions, and an experiment run to its end in this process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from agents.evals import runner
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, Dataset, Environment, Experiment
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn


@pytest.fixture
def scripted_openai() -> Iterator[FakeOpenAI]:
    """The fake OpenAI-compatible server, with LLM_OFFLINE off, for agents on
    `openai/gpt-4o-mini` (tests.support.admin.REMOTE_CALCULATOR); a live server run in this
    process (the browser tests') reads these settings and this environment too."""
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", fake.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with override_settings(LLM_OFFLINE=False):
            yield fake


# (question, expected answer) of the dataset, in its order.
QUESTIONS = [
    ("What is 2 plus 2?", "4"),
    ("What is 12 times 11?", "132"),
    ("What is 7 minus 3?", "4"),
]


def arithmetic(user: Any, environment: Environment, cases: int = 2, name: str = "arith") -> Dataset:
    """A dataset of tool agents' cases: the first `cases` QUESTIONS, each expecting its
    answer exactly."""
    dataset = dataset_create(user=user, environment=environment, name=name, agent_type="tool")
    cases_add(
        user=user,
        dataset=dataset,
        cases=[{"input": q, "expected": {"output": a}} for q, a in QUESTIONS[:cases]],
    )
    dataset.refresh_from_db()
    return dataset


def ran(
    fake: FakeOpenAI,
    user: Any,
    agent: Agent,
    dataset: Dataset,
    answers: list[str],
    version: str = "latest",
    scorers: Any = ("exact",),
) -> Experiment:
    """An experiment of `version` on `dataset` whose runs answered `answers` in order (one
    slot, so case by case), scored by `scorers`, run to its end."""
    fake.script(*(Turn(text=(answer,)) for answer in answers))
    spec = ExperimentSpec(version=version, scorers=list(scorers), concurrency=1)
    experiment = experiment_start(
        user=user, agent=agent, dataset=dataset, spec=spec, dispatch=False
    )
    runner.experiment_run_here(experiment)
    experiment.refresh_from_db()
    return experiment
