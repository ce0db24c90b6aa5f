"""A promptfoo configuration into a dataset (docs/api.md#importing-a-promptfoo-configuration):
the dataset made when it is new, its tests added as one revision, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agentbuilder.errors import Invalid
from agentbuilder.users import User
from agents.evals.cases import case_check
from agents.evals.files import MAX_ERRORS
from agents.evals.promptfoo import PromptfooImport, promptfoo_import
from agents.evals.selectors import datasets_visible
from agents.evals.services import cases_add, dataset_create
from agents.models import Dataset, Environment


@dataclass(frozen=True)
class PromptfooImported:
    dataset: Dataset
    created: bool
    revision: int  # the dataset's revision holding the imported cases
    imported: PromptfooImport  # its cases, the scorers to run them with, the warnings


def promptfoo_read(
    config: bytes | str, *, agent_type: str, **options: str | None
) -> PromptfooImport:
    """promptfoo_import, each case then checked for `agent_type` (case_check) at its test's
    path in the configuration; raises Invalid (up to MAX_ERRORS errors)."""
    imported = promptfoo_import(config, agent_type=agent_type, **options)
    problems = []
    for case, loc in zip(imported.cases, imported.locs, strict=True):
        try:
            case_check(case, agent_type=agent_type, loc=loc)
        except Invalid as exc:
            problems.extend(exc.errors)
            if len(problems) >= MAX_ERRORS:
                break
    if problems:
        raise Invalid(problems)
    return imported


@transaction.atomic
def promptfoo_dataset_import(
    *,
    user: User,
    environment: Environment,
    dataset_name: str,
    config: bytes | str,
    agent_type: str | None = None,
    judge_model: str | None = None,
    input_var: str | None = None,
) -> PromptfooImported:
    """Add a promptfoo configuration's tests to the dataset named `dataset_name` in
    `environment`, made for `agent_type` agents when there is none. The caller's EDIT (or
    CREATE) on the environment is its own to check. Raises Invalid at the configuration's
    path, or at `agentType` (missing for a new dataset, another than the dataset's)."""
    dataset = datasets_visible(user, environment).filter(name__iexact=dataset_name).first()
    created = dataset is None
    if dataset is None:
        if agent_type is None:
            raise Invalid.at(("agentType",), f"dataset '{dataset_name}' is new: its agent type")
        dataset = dataset_create(
            user=user, environment=environment, name=dataset_name, agent_type=agent_type
        )
    elif agent_type is not None and agent_type != dataset.agent_type:
        raise Invalid.at(
            ("agentType",),
            f"dataset '{dataset.name}' holds cases of {dataset.agent_type} agents",
        )
    imported = promptfoo_read(
        config, agent_type=dataset.agent_type, judge_model=judge_model, input_var=input_var
    )
    revision = cases_add(user=user, dataset=dataset, cases=imported.cases, loc=("config",))
    return PromptfooImported(dataset, created, revision, imported)
