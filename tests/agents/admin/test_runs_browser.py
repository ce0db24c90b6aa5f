"""The runs admin in Chromium at 1280 px (agents/admin/runs.py, run_page.py): the runs list,
a run's page and its thread read as a conversation, and the agent list, each without a
horizontal scroll. What they render: test_run_page.py and test_runs.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from typing import Any

from django.urls import reverse

from agents.models import Run
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)

LONG = "Please multiply 3 by 5, and explain every step you take along the way in detail " * 3


def invoke(client: Any, agent: Any, text: str) -> Run:
    body = {"messages": [{"role": "user", "content": text}], "threadId": "budget-review-2026"}
    answer = client.post(f"/v1/agents/{agent.pk}/versions/latest/invoke", body, format="json")
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=answer.headers["X-Run-Id"])


def fits(page: Page) -> bool:
    """No horizontal scroll: not the page's, nor a list's own (the admin scrolls a list too
    wide for its box inside the box)."""
    widths = page.driver.execute_script(
        "const list = document.querySelector('#changelist .results');"
        "return [document.documentElement.scrollWidth, window.innerWidth,"
        " list ? list.scrollWidth : 0, list ? list.clientWidth : 0];"
    )
    page_width, window, list_width, box = widths
    assert page_width <= window, widths
    assert list_width <= box, widths
    return True


@BROWSER
def test_the_runs_pages_and_the_agent_list_fit_1280_px(
    page: Page, admin_user: Any, as_user: Any, make_agent: Any
) -> None:
    agent = make_agent("quarterly-budget-calculator")
    first = invoke(as_user(admin_user), agent, "What is 3x5?")
    second = invoke(as_user(admin_user), agent, LONG)
    page.login(admin_user)
    assert page.driver.execute_script("return window.innerWidth") == 1280

    page.open(reverse("admin:agents_agent_changelist"))
    page.wait_for("#result_list td.field-playground a", text="Playground")
    assert fits(page)
    page.shot("agent-list")

    page.open(reverse("admin:agents_run_changelist"))
    page.wait_for("#result_list td.field-input", text="Please multiply 3 by 5")
    assert fits(page)
    for column in ("status", "latency", "total_tokens", "cost", "input"):
        cell = page.find(f"#result_list td.field-{column}")
        assert cell.is_displayed(), column
        assert cell.rect["x"] + cell.rect["width"] <= 1280, column
    page.shot("runs-list")

    page.open(reverse("admin:agents_run_change", args=[second.pk]))
    page.wait_for("#run-conversation .run-bubble-assistant")
    assert fits(page)
    assert not page.find("#run-json pre").is_displayed()  # JSON only on request
    page.find("#run-conversation .run-tool-call summary").click()
    page.wait_for("#run-conversation .run-tool-call dd pre", text='"a": 3')
    page.driver.execute_script("document.getElementById('run-conversation').scrollIntoView()")
    page.shot("run-page")

    page.find("#run-thread-link").click()
    page.wait_for("#turn-2 .run-bubble-user", text="Please multiply 3 by 5")
    assert fits(page)
    assert page.find("#turn-1").get_attribute("data-run") == str(first.pk)
    page.shot("thread-page")
