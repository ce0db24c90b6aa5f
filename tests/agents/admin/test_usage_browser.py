"""The admin's usage page in Chromium (agents/admin/usage.py): reached from the app list, its
charts drawn, its filters applied. What it adds up: test_usage.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from typing import Any

from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from agents.models import Environment
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.support.usage import spend


@BROWSER
def test_the_usage_page_charts_cost_and_tokens_and_filters_by_environment_and_period(
    page: Page, make_agent: Any, admin_user: Any, env: Environment, other_env: Environment
) -> None:
    world = spend(make_agent, admin_user, env, other_env)
    world.alice.is_staff = True
    world.alice.save()
    page.login(world.alice)
    page.open(reverse("admin:index"))
    page.find(".model-runusage a[href$='/runusage/']").click()
    page.wait_for("h1", text="Usage")

    page.find("#id_start").send_keys("11/10/2026")
    page.find("#id_end").send_keys("11/11/2026")
    Select(page.find("#id_environment")).select_by_visible_text(env.name)
    page.find("#usage-show").click()
    page.wait_for("#usage-cost", text="$0.015")
    assert page.find("#usage-runs").text == "3"
    assert "environment=" in page.path

    charts = page.find_all("#usage-charts svg")
    assert len(charts) == 6
    assert all(chart.is_displayed() and chart.size["height"] > 50 for chart in charts)
    cost = page.find("svg.chart-cost")
    assert len(cost.find_elements(By.CSS_SELECTOR, ".chart-dot")) == 2  # the period's two days
    agents = page.find("svg.chart-top-agent")
    bars = agents.find_elements(By.CSS_SELECTOR, ".chart-bar")
    assert len(bars) == 2
    # alpha's $0.015 is the longest bar; beta's (no price) has none.
    assert float(bars[0].get_attribute("width") or 0) > 0
    assert float(bars[1].get_attribute("width") or 0) == 0
    values = [v.text for v in agents.find_elements(By.CSS_SELECTOR, ".chart-value")]
    assert values == ["$0.015", "unknown"]
    page.shot("usage")

    Select(page.find("#id_environment")).select_by_visible_text("All environments")
    page.find("#usage-show").click()
    page.wait_for("#usage-cost", text="$1.015")  # gamma's run in the other environment
    rows = page.find_all("#usage-agent tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == ["gamma", "alpha", "beta"]

    page.find(".usage-preset").click()  # the last 7 days: nothing of November 10
    page.wait_for("#usage-runs")
    assert page.find("#usage-agent tbody").text == "No runs in this period."
