"""Experiments (docs/api.md#experiments): a version run on every case of a dataset's
revision, `repetitions` times each, scored by the named scorers.

`experiment_start` checks everything it can before anything is written (the version, the
dataset and its revision, the scorers and their options, each task case's inputs against
the version's input schema), then inserts the experiment `queued` with one result row per
case and repetition, in one transaction, and hands it to workers once committed
(agents.evals.runner). The runs are the requester's, protocol `eval`: the run path checks
INVOKE again for each, as for any call.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from agentbuilder.errors import ErrorItem, Invalid
from agentbuilder.users import User
from agents.configs import TaskAgentConfig, config_parse
from agents.evals import runner
from agents.evals.scorers.registry import scorers_check
from agents.evals.selectors import dataset_cases
from agents.models import (
    EXPERIMENT_ENDED,
    Agent,
    AgentVersion,
    Dataset,
    Experiment,
    ExperimentResult,
    ExperimentStatus,
    ResultStatus,
)
from agents.runs.background import run_stop
from agents.runs.request import TASK_TYPES
from agents.runtime.task_agent import TaskInputError, prepare_inputs
from agents.schedules.request import version_check
from agents.templating import TemplateLimitError

MAX_REPETITIONS = 10
MAX_CONCURRENCY = 32


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment as its requester asks for it (the API's body, the admin's form)."""

    version: str
    scorers: Any
    revision: int | None = None
    repetitions: int = 1
    concurrency: int = 4


def scorers_key(scorers: list[dict[str, Any]]) -> str:
    """The digest of checked scorers: experiments with equal ones score alike, so a gate
    may reuse one's results (agents.evals.gates)."""
    text = json.dumps(scorers, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def experiment_check(
    *, agent: Agent, dataset: Dataset, spec: ExperimentSpec
) -> tuple[AgentVersion, int, list[dict[str, Any]]]:
    """The version, revision and checked scorers `spec` names. Raises Invalid at the
    body's field (a case that does not fit the version at its path under `dataset`)."""
    problems: list[ErrorItem] = []
    if dataset.environment_id != agent.environment_id:
        problems.append(
            ErrorItem(("body", "datasetId"), "the dataset is in another environment than the agent")
        )
    elif dataset.agent_type != agent.agent_type:
        problems.append(
            ErrorItem(
                ("body", "datasetId"),
                f"dataset '{dataset.name}' holds cases of {dataset.agent_type} agents; "
                f"agent '{agent.name}' is a {agent.agent_type} agent",
            )
        )
    if not 1 <= spec.repetitions <= MAX_REPETITIONS:
        problems.append(ErrorItem(("body", "repetitions"), f"from 1 to {MAX_REPETITIONS}"))
    if not 1 <= spec.concurrency <= MAX_CONCURRENCY:
        problems.append(ErrorItem(("body", "concurrency"), f"from 1 to {MAX_CONCURRENCY}"))
    revision = dataset.revision if spec.revision is None else spec.revision
    if not 1 <= revision <= dataset.revision:
        why = (
            "the dataset has no case yet"
            if dataset.revision == 0
            else f"dataset '{dataset.name}' has revisions 1 to {dataset.revision}"
        )
        problems.append(ErrorItem(("body", "revision"), why))
    version: AgentVersion | None = None
    try:
        version = version_check(agent=agent, version=str(spec.version))
    except Invalid as exc:
        problems.extend(exc.errors)
    scorers: list[dict[str, Any]] = []
    try:
        scorers = scorers_check(spec.scorers, loc=("body", "scorers"))
    except Invalid as exc:
        problems.extend(exc.errors)
    if problems:
        raise Invalid(problems)
    assert version is not None
    if not dataset_cases(dataset, revision).exists():
        raise Invalid.at(("body", "revision"), f"revision {revision} of the dataset has no case")
    if agent.agent_type in TASK_TYPES:
        _task_cases_check(version, dataset, revision)
    return version, revision, scorers


def _task_cases_check(version: AgentVersion, dataset: Dataset, revision: int) -> None:
    """Every task case's inputs fit the version's input schema and template."""
    config = config_parse(TASK_TYPES[0], version.config)
    assert isinstance(config, TaskAgentConfig)
    problems: list[ErrorItem] = []
    for position, case_input in dataset_cases(dataset, revision).values_list("position", "input"):
        at = ("dataset", "cases", position, "input", "inputs")
        try:
            prepare_inputs(config, case_input.get("inputs", {}))
        except TaskInputError as exc:
            problems.extend(ErrorItem((*at, *path), msg) for path, msg in exc.problems)
        except TemplateLimitError as exc:
            problems.append(ErrorItem(at, f"the prompt template went over a limit: {exc}"))
        if len(problems) >= 20:
            break
    if problems:
        raise Invalid(problems)


def experiment_start(
    *, user: User, agent: Agent, dataset: Dataset, spec: ExperimentSpec, dispatch: bool = True
) -> Experiment:
    """Check and queue an experiment of `agent` (the caller's INVOKE on it and READ of the
    dataset are the view's to check), and hand it to workers unless `dispatch` is False
    (then the caller runs it: `runner.experiment_run_here`). Raises Invalid."""
    version, revision, scorers = experiment_check(agent=agent, dataset=dataset, spec=spec)
    with transaction.atomic():
        experiment = Experiment.objects.create(
            agent=agent,
            version=version,
            dataset=dataset,
            revision=revision,
            scorers=scorers,
            scorers_key=scorers_key(scorers),
            repetitions=spec.repetitions,
            concurrency=spec.concurrency,
            requester=user,
            lease_until=timezone.now() + timedelta(seconds=float(settings.RUN_QUEUE_LEASE_SECONDS)),
        )
        cases = list(dataset_cases(dataset, revision).values_list("pk", "position"))
        ExperimentResult.objects.bulk_create(
            [
                ExperimentResult(
                    experiment=experiment, case_id=case_id, position=position, repetition=r
                )
                for case_id, position in cases
                for r in range(spec.repetitions)
            ],
            batch_size=2000,
        )
        experiment.total = len(cases) * spec.repetitions
        Experiment.objects.filter(pk=experiment.pk).update(total=experiment.total)
        if dispatch:
            transaction.on_commit(lambda: runner.experiment_dispatch(experiment))
    return experiment


def experiment_cancel(*, user: User, experiment: Experiment) -> bool:
    """Stop `experiment`: its cases not yet run are not run, its runs under way are
    canceled, and it ends `canceled` with the summary of what did run. False if it had
    ended."""
    with transaction.atomic():
        stopped = Experiment.objects.filter(
            pk=experiment.pk, status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING]
        ).update(status=ExperimentStatus.CANCELED, completed_at=Now(), lease_until=None)
        if not stopped:
            return False
        experiment.results.filter(status=ResultStatus.PENDING).update(status=ResultStatus.CANCELED)
        under_way = list(
            experiment.results.filter(status=ResultStatus.RUNNING, run__isnull=False).values_list(
                "run_id", flat=True
            )
        )
    for run_id in under_way:
        run_stop(run_id=run_id, by=user)
    runner.experiment_summarize(experiment.pk)
    return True


def experiment_json(experiment: Experiment) -> dict[str, Any]:
    """The experiment as GET /v1/experiments/{id} answers it (docs/api.md#experiments)."""
    summary = experiment.summary or {}
    return {
        "id": str(experiment.pk),
        "agentId": str(experiment.agent_id),
        "version": experiment.version.number,
        "datasetId": str(experiment.dataset_id),
        "revision": experiment.revision,
        "scorers": experiment.scorers,
        "repetitions": experiment.repetitions,
        "concurrency": experiment.concurrency,
        "status": experiment.status,
        "progress": {"done": experiment.done, "total": experiment.total},
        "summary": summary.get("scorers", {}),
        "passRate": summary.get("passRate"),
        "latencyMs": summary.get("latencyMs", {"p50": None, "p95": None}),
        "tokensUsage": summary.get("tokensUsage", {}),
        "judgeTokensUsage": summary.get("judgeTokensUsage", {}),
        "costUsd": summary.get("costUsd"),
        "errors": summary.get("errors", 0),
        "error": experiment.error,
        "createdAt": experiment.created_at,
        "startedAt": experiment.started_at,
        "completedAt": experiment.completed_at,
        "ended": experiment.status in EXPERIMENT_ENDED,
    }
