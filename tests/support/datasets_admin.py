"""What the tests of datasets in the admin share: staff holding some actions on an
environment, a browser signed in as them, a dataset with cases, its pages' URLs."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.evals.services import cases_add, dataset_create
from agents.models import Dataset, Environment
from tests.factories import UserFactory


def staff(name: str, environment: Environment, *actions: Action) -> Any:
    user = UserFactory(username=name, is_staff=True)
    for action in actions:
        grant(user, action, environment)
    return user


def signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def dataset_with(
    user: Any,
    environment: Environment,
    *questions: str,
    name: str = "smoke",
    agent_type: str = "tool",
) -> Dataset:
    """A dataset whose cases ask `questions`, each expecting "ok" (revision 1, or 0 without)."""
    dataset = dataset_create(user=user, environment=environment, name=name, agent_type=agent_type)
    if questions:
        cases = [{"input": q, "expected": {"output": "ok"}} for q in questions]
        cases_add(user=user, dataset=dataset, cases=cases)
    return dataset


def change_url(dataset: Dataset) -> str:
    return reverse("admin:agents_dataset_change", args=[dataset.pk])


def case_url(dataset: Dataset, case_id: Any) -> str:
    return reverse("admin:agents_dataset_case", args=[dataset.pk, case_id])


def cases_add_url(dataset: Dataset) -> str:
    return reverse("admin:agents_dataset_cases_add", args=[dataset.pk])


def cases_remove_url(dataset: Dataset) -> str:
    return reverse("admin:agents_dataset_cases_remove", args=[dataset.pk])


def upload_url(dataset: Dataset) -> str:
    return reverse("admin:agents_dataset_upload", args=[dataset.pk])
