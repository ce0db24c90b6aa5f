"""Budgets in the admin (agents/budgets/admin.py): the page lists the budgets of the
environments its user may EDIT, each with this period's spend as a progress bar, and warns
of those at 80 % or more; a budget is added through the service (its checks, located on the
form's fields). And the page in headless Chromium."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By

from agents.access.permissions import Action
from agents.budgets.gate import charge
from agents.budgets.selectors import budget_limits
from agents.budgets.services import BudgetFields, budget_create
from agents.models import Budget, Environment
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.support.datasets_admin import signed_in, staff

LIST = reverse("admin:agents_budget_changelist")
ADD = reverse("admin:agents_budget_add")


def budget(user: Any, environment: Environment, tokens: int, spent: int, **more: Any) -> Budget:
    fields = BudgetFields(
        scope=more.pop("scope", "environment"),
        target=more.pop("target", None),
        period="day",
        limit_usd=None,
        limit_tokens=tokens,
        action=more.pop("action", "block"),
        description=more.pop("description", ""),
    )
    made = budget_create(user=user, environment=environment, fields=fields)
    if spent:
        charge([budget_limits(made)], Decimal(0), spent)
    return made


@pytest.mark.django_db
def test_the_page_shows_each_budgets_spend_and_warns_from_80_percent(
    env: Environment, other_env: Environment, admin_user: Any
) -> None:
    editor = staff("editor", env, Action.READ, Action.EDIT)
    budget(editor, env, 1000, 500, description="half")
    budget(editor, env, 1000, 850, action="warn")
    budget(editor, env, 1000, 1200)
    budget(admin_user, other_env, 10, 10)  # not the editor's to see

    page = signed_in(editor).get(LIST)

    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="budget-bar"') == 3
    for used in ('data-used="0.5000"', 'data-used="0.8500"', 'data-used="1.2000"'):
        assert used in html
    warned = [str(m) for m in page.context["messages"]]
    assert len(warned) == 2, warned
    assert "120 %" in warned[0]
    assert "85 %" in warned[1]


@pytest.mark.django_db
def test_a_budget_added_in_the_admin_passes_the_services_checks(
    env: Environment, make_agent: Any
) -> None:
    editor = staff("editor", env, Action.READ, Action.EDIT)
    agent = make_agent()
    browser = signed_in(editor)
    form = {
        "environment": str(env.pk),
        "scope": "agent",
        "agent": str(agent.pk),
        "period": "month",
        "limit_usd": "-3",
        "action": "block",
    }

    refused = browser.post(ADD, form)
    assert refused.status_code == 200  # the form again, with the service's error on the field
    assert "must be over 0" in str(refused.context["adminform"].form.errors["limit_usd"])
    assert not Budget.objects.exists()

    assert browser.post(ADD, {**form, "limit_usd": "12.5"}).status_code == 302
    made = Budget.objects.get()
    assert (made.agent, made.period, made.limit_usd) == (agent, "month", Decimal("12.5"))
    assert made.created_by == editor

    missing = browser.post(ADD, {**form, "agent": "", "limit_usd": "1"})
    assert "choose the agent" in str(missing.context["adminform"].form.errors["agent"])


@pytest.mark.django_db
def test_staff_without_edit_on_the_environment_see_and_add_no_budgets(
    env: Environment, admin_user: Any
) -> None:
    budget(admin_user, env, 1000, 900)
    reader = staff("reader", env, Action.READ, Action.INVOKE)
    browser = signed_in(reader)

    page = browser.get(LIST)
    assert 'class="budget-bar"' not in page.content.decode()
    assert list(page.context["messages"]) == []
    assert browser.get(ADD).status_code == 403


@BROWSER
def test_the_budget_page_draws_progress_bars_in_chromium(
    page: Page, env: Environment, admin_user: Any
) -> None:
    editor = staff("editor", env, Action.READ, Action.EDIT)
    budget(editor, env, 1000, 300)
    budget(editor, env, 1000, 900)

    page.login(editor)
    page.open(LIST)

    page.wait_for(".messagelist", text="90 % of its limit this period")
    bars = page.find_all(".budget-bar")
    widths = sorted(
        round(bar.find_element(By.CSS_SELECTOR, "div").size["width"] / bar.size["width"] * 100)
        for bar in bars
    )
    assert widths == [30, 90]
    assert sorted(e.text for e in page.find_all(".budget-used")) == ["30 %", "90 %"]
    page.shot("budgets")
