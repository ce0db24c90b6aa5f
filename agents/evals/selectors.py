"""Reads of datasets and experiments, narrowed to what the caller may see.

A dataset belongs to its environment: READ, CREATE, EDIT and DELETE on it are the agent
permissions held on that environment (docs/api.md#permissions). An experiment is its
agent's: READ on the agent shows it and its results.
"""

from __future__ import annotations

import uuid

from django.db.models import Q, QuerySet

from agentbuilder.errors import NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import Action, agents_with, environments_with
from agents.models import Agent, Dataset, DatasetCase, Environment, Experiment, ExperimentResult


def datasets_visible(user: User, environment: Environment | None = None) -> QuerySet[Dataset]:
    datasets = Dataset.objects.filter(environment__in=environments_with(user, Action.READ))
    if environment is not None:
        datasets = datasets.filter(environment=environment)
    return datasets.select_related("environment")


def dataset_for(
    user: User,
    dataset_id: uuid.UUID,
    action: Action = Action.READ,
    environment: Environment | None = None,
) -> Dataset:
    """The dataset, if `user` may READ it (in `environment`, when given). Raises NotFound,
    or PermissionDenied when it may read it but not perform `action`."""
    dataset = datasets_visible(user, environment).filter(pk=dataset_id).first()
    if dataset is None:
        raise NotFound(f"Dataset '{dataset_id}' not found.")
    if (
        action != Action.READ
        and not environments_with(user, action).filter(pk=dataset.environment_id).exists()
    ):
        raise PermissionDenied(
            f"You do not have {action.name} permission on datasets of environment "
            f"'{dataset.environment.name}'."
        )
    return dataset


def in_revision(revision: int) -> Q:
    """DatasetCase rows in `revision`."""
    return Q(added_in__lte=revision) & (Q(removed_in__isnull=True) | Q(removed_in__gt=revision))


def dataset_cases(dataset: Dataset, revision: int | None = None) -> QuerySet[DatasetCase]:
    """The cases of `dataset` at `revision` (its current one by default), in order."""
    at = dataset.revision if revision is None else revision
    return dataset.cases.filter(in_revision(at)).order_by("position")


def experiments_visible(user: User, agent: Agent | None = None) -> QuerySet[Experiment]:
    experiments = Experiment.objects.filter(agent__in=agents_with(user, Action.READ))
    if agent is not None:
        experiments = experiments.filter(agent=agent)
    return experiments.select_related("agent", "version", "dataset")


def experiment_for(
    user: User, experiment_id: uuid.UUID, environment: Environment | None = None
) -> Experiment:
    experiments = experiments_visible(user)
    if environment is not None:
        experiments = experiments.filter(agent__environment=environment)
    experiment = experiments.filter(pk=experiment_id).first()
    if experiment is None:
        raise NotFound(f"Experiment '{experiment_id}' not found.")
    return experiment


def experiment_results(experiment: Experiment) -> QuerySet[ExperimentResult]:
    return experiment.results.select_related("case").order_by("position", "repetition")
