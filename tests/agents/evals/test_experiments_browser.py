"""Experiments in the admin, in Chromium: started from the agent's experiments page, the
progress bar moving while the cases run (each case's answer held by the fake model until
the test lets it go: counted, not timed), cancel, and the compare page with a regression
listed first. The views' permissions and errors: test_admin_experiments.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py and tests/support)
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from selenium.webdriver.support.select import Select

from agents.access.permissions import Action, grant
from agents.models import Agent, Experiment
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.support.admin import REMOTE_CALCULATOR
from tests.support.experiments import arithmetic, ran, scripted_openai  # noqa: F401

pytestmark = pytest.mark.usefixtures("reseed_after_module")
# More than the events of one answer: a released gate lets its whole answer through.
WHOLE_ANSWER = 100


@pytest.fixture
def invoker(env: Any) -> Any:
    user = UserFactory(username="invoker", is_staff=True)
    grant(user, Action.READ, env)
    grant(user, Action.INVOKE, env)
    user.user_permissions.add(
        Permission.objects.get(codename="view_agent", content_type__model="agent")
    )
    return user


@pytest.fixture
def calc(make_agent: Any) -> Agent:
    return make_agent("calc", config=REMOTE_CALCULATOR)


@pytest.fixture
def held(scripted_openai: FakeOpenAI) -> Iterator[list[threading.Semaphore]]:
    """Three answers ("4", "132", "4"), each held after its first event until the test
    releases its gate; every gate is let go at the end, so no case waits past the test."""
    gates = [threading.Semaphore(0) for _ in range(3)]
    answers = ["4", "132", "4"]
    scripted_openai.script(*(Turn(text=(a,), gate=g) for a, g in zip(answers, gates, strict=True)))
    yield gates
    for gate in gates:
        gate.release(WHOLE_ANSWER)


def start(page: Page, agent: Agent, dataset: Any) -> Experiment:
    """Start an experiment of `dataset`'s cases one at a time, through the form."""
    page.open(reverse("admin:agents_agent_change", args=[agent.pk]))
    page.find("a.experiments-link").click()
    page.wait_for("#experiment-form")
    Select(page.find("#id_dataset")).select_by_visible_text(dataset.name)
    concurrency = page.find("#id_concurrency")
    concurrency.clear()
    concurrency.send_keys("1")
    page.find("#experiment-start").click()
    page.wait_for("#experiment-progress")
    experiment = Experiment.objects.get(dataset=dataset)
    assert page.path == reverse("admin:agents_agent_experiment", args=[agent.pk, experiment.pk])
    return experiment


def progress(page: Page) -> tuple[str, str]:
    """The bar's value and its text, as shown now."""
    bar = page.find("#experiment-progress")
    return bar.get_attribute("value") or "", page.find("#experiment-progress-text").text


@BROWSER
def test_the_progress_bar_moves_case_by_case_until_the_summary_shows(
    page: Page, invoker: Any, calc: Agent, env: Any, held: list[threading.Semaphore]
) -> None:
    dataset = arithmetic(invoker, env, cases=3)
    page.login(invoker)
    experiment = start(page, calc, dataset)

    seen = [page.wait_until(lambda: progress(page) == ("0", "0 / 3") or None, "0 of 3")]
    page.wait_for("#experiment-status", text="running")
    for done, gate in enumerate(held[:2], start=1):
        gate.release(WHOLE_ANSWER)
        want = (str(done), f"{done} / 3")
        seen.append(page.wait_until(lambda want=want: progress(page) == want or None, want[1]))
    page.shot("experiment-running")
    held[2].release(WHOLE_ANSWER)
    # The last case ends the experiment: the page reloads with the summary and the results.
    summary = page.wait_for("#experiment-summary")

    assert len(seen) == 3  # the bar showed 0, 1 and 2 of 3 before the end
    assert progress(page) == ("3", "3 / 3")
    assert page.find("#experiment-status").text == "completed"
    assert "100.0%" in summary.text or "1.000" in summary.text
    assert len(page.find_all("#experiment-results tbody tr.result-passed")) == 3
    assert page.find_all("#experiment-cancel") == []
    page.shot("experiment-completed")
    experiment.refresh_from_db()
    assert (experiment.status, experiment.done) == ("completed", 3)


@BROWSER
def test_cancel_stops_a_running_experiment(
    page: Page, invoker: Any, calc: Agent, env: Any, held: list[threading.Semaphore]
) -> None:
    dataset = arithmetic(invoker, env, cases=3)
    page.login(invoker)
    experiment = start(page, calc, dataset)
    held[0].release(WHOLE_ANSWER)
    page.wait_until(lambda: progress(page)[1] == "1 / 3" or None, "1 of 3")

    page.find("#experiment-cancel").click()

    page.wait_for("#experiment-status", text="canceled")
    page.wait_for(".messagelist", text="Experiment canceled")
    assert page.find_all("#experiment-cancel") == []
    experiment.refresh_from_db()
    assert experiment.status == "canceled"
    statuses = list(experiment.results.order_by("position").values_list("status", flat=True))
    assert statuses[0] == "scored"
    assert statuses[2] == "canceled"  # never run


@BROWSER
def test_two_experiments_picked_in_the_list_compare_with_the_regression_first(
    page: Page, invoker: Any, calc: Agent, env: Any, scripted_openai: FakeOpenAI
) -> None:
    dataset = arithmetic(invoker, env, cases=3)
    a = ran(scripted_openai, invoker, calc, dataset, ["5", "132", "4"])
    b = ran(scripted_openai, invoker, calc, dataset, ["4", "131", "4"])
    page.login(invoker)
    page.open(reverse("admin:agents_agent_experiments", args=[calc.pk]))
    assert len(page.find_all("#experiment-charts svg .chart-dot")) >= 4
    page.shot("experiments-list")

    page.find(f'tr[data-experiment="{a.pk}"] input[name=a]').click()
    page.find(f'tr[data-experiment="{b.pk}"] input[name=b]').click()
    page.find("#experiments-compare").click()

    rows = page.wait_until(lambda: page.find_all("#compare-rows tbody tr") or None, "the rows")
    first = rows[0]
    assert first.get_attribute("data-change") == "regression"
    assert first.get_attribute("data-position") == "2"
    assert "131" in first.text
    assert "132" in first.text
    assert [r.get_attribute("data-change") for r in rows] == ["regression", "improvement", "same"]
    page.shot("experiments-compare")

    Select(page.find("#compare-show")).select_by_value("improvements")
    page.find("#compare-go").click()
    page.wait_until(
        lambda: (
            [r.get_attribute("data-change") for r in page.find_all("#compare-rows tbody tr")]
            == ["improvement"]
            or None
        ),
        "only the improvement",
    )
