"""Alias gates on the admin's aliases page (agents/evals/admin_gates.py): a gate set from
its form, a promotion it refuses shown with its experiment and failing case, one it lets
through recorded with the experiment, a forced one with its reason; in Chromium too."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py)
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, AliasChange, AliasGate, Dataset
from agents.services.versions import version_add
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.factories import CALCULATOR_CONFIG, UserFactory

pytestmark = pytest.mark.usefixtures("reseed_after_module")

ANSWER = "The result of multiply(12, 11) is 132."
ADD_ONLY = {
    **CALCULATOR_CONFIG,
    "tools": [{"toolType": "function", "name": "add", "description": "Adds", "funcName": "add"}],
}


@pytest.fixture
def editor(env: Any) -> Any:
    user = UserFactory(username="editor", is_staff=True)
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(user, action, env)
    user.user_permissions.add(
        Permission.objects.get(codename="view_agent", content_type__model="agent")
    )
    return user


@pytest.fixture
def calc(make_agent: Callable[..., Agent], admin_user: Any) -> Agent:
    agent = make_agent("calc")
    version_add(user=admin_user, agent=agent, config=ADD_ONLY)  # v2: other words, fails
    version_add(user=admin_user, agent=agent, config=CALCULATOR_CONFIG)  # v3: passes
    return agent


@pytest.fixture
def golden(calc: Agent, admin_user: Any, env: Any) -> Dataset:
    dataset = dataset_create(user=admin_user, environment=env, name="golden", agent_type="tool")
    cases_add(
        user=admin_user,
        dataset=dataset,
        cases=[{"input": "What is 12 times 11?", "expected": {"output": ANSWER}}],
    )
    return dataset


def aliases(agent: Agent) -> str:
    return reverse("admin:agents_agent_aliases", args=[agent.pk])


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_gate_set_in_the_admin_refuses_a_failing_version_and_lets_a_passing_one_through(
    calc: Agent, golden: Dataset, editor: Any
) -> None:
    admin = as_user(editor)
    bad = admin.post(
        aliases(calc),
        {"action": "gate", "name": "prod", "dataset": golden.pk, "scorers": '["exact"]',
         "thresholds": '{"exact": 2}'},
    )  # fmt: skip
    assert bad.status_code == 200
    assert "exact: a number from 0 to 1" in bad.content.decode()
    assert not AliasGate.objects.exists()
    admin.post(
        aliases(calc),
        {"action": "gate", "name": "prod", "dataset": golden.pk, "scorers": '["exact"]',
         "thresholds": '{"exact": 1}'},
    )  # fmt: skip

    refused = admin.post(
        aliases(calc), {"action": "promote", "name": "prod", "version": 2}, follow=True
    )
    page = refused.content.decode()
    assert "does not pass the gate of alias &#x27;prod&#x27;" in page
    assert "gate-experiment" in page
    assert "case 1: answered" in page
    assert not calc.aliases.exists()
    admin.post(aliases(calc), {"action": "promote", "name": "prod", "version": 3})
    assert calc.aliases.get().version.number == 3
    forced = admin.post(
        aliases(calc),
        {"action": "promote", "name": "prod", "version": 2, "force": "on", "reason": "x"},
        follow=True,
    )
    assert "needs AUDIT" in forced.content.decode()
    [change] = AliasChange.objects.all()
    assert change.experiment is not None
    assert change.experiment.version.number == 3


@BROWSER
def test_a_gated_promotion_refused_then_allowed_in_chromium(
    page: Page, calc: Agent, golden: Dataset, editor: Any
) -> None:
    page.login(editor)
    page.open(aliases(calc))
    page.find("#gate-form #id_name").send_keys("prod")
    page.find(f'#gate-form #id_dataset option[value="{golden.pk}"]').click()
    page.find("#gate-go").click()
    page.wait_for("#alias-gates tr[data-gate=prod]", text="exact ≥ 1.0")

    page.find('#promote-form #id_version option[value="2"]').click()
    page.find("#promote-form #id_name").send_keys("prod")
    page.find("#promote-go").click()
    refusal = page.wait_for(".messagelist", text="does not pass the gate")
    page.shot("gate-refused")
    assert "case 1: answered" in refusal.text
    assert not page.find_all("#aliases tr[data-alias=prod]")

    page.find('#promote-form #id_version option[value="3"]').click()
    page.find("#promote-form #id_name").send_keys("prod")
    page.find("#promote-go").click()
    page.wait_for("#aliases tr[data-alias=prod] .alias-version", text="v3")
    page.shot("gate-allowed")
    link = page.wait_for("#alias-history .gate a", text="passed its experiment")
    link.click()
    page.wait_for("#experiment-status", text="completed")
