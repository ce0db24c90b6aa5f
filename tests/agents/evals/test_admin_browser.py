"""Datasets in the admin in Chromium: a CSV uploaded and a case edited in the table
(agents/static/agents/dataset_cases.js), a run added to a dataset from its page, thumbs
and "Add to dataset" under a playground answer (agents/static/agents/playground.js). What
each view writes is tested over HTTP in test_admin.py, test_table_views.py,
test_uploads.py and test_from_runs.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select

from agents.access.permissions import Action
from agents.evals.selectors import dataset_cases
from agents.examples import CALCULATOR
from agents.models import Agent, Dataset, Run, RunFeedback
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.conftest import client_for
from tests.support.datasets_admin import change_url, dataset_with, staff

CSV = "input,expected.output,expected.contains\nWhat is 3x5?,15,15\nWhat is 2x2?,4,4\n"


@pytest.fixture
def editor(env: Any) -> Any:
    """Staff who may invoke agents and edit datasets in the default environment."""
    return staff("editor", env, Action.READ, Action.INVOKE, Action.EDIT)


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def cell(row: WebElement, field: str) -> WebElement:
    return row.find_element(By.CSS_SELECTOR, f'.case-cell[data-field="{field}"]')


def retype(box: WebElement, text: str) -> None:
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    box.send_keys(text)


def revision_shown(page: Page, number: int) -> None:
    page.wait_until(
        lambda: page.find("#dataset-revision").text == str(number), f"revision {number} shown"
    )


@BROWSER
def test_a_csv_uploaded_then_a_case_edited_in_the_table_makes_a_new_revision(
    page: Page, editor: Any, env: Any, admin_user: Any, tmp_path: Path
) -> None:
    dataset = dataset_with(admin_user, env, name="arith")
    file = tmp_path / "arith.csv"
    file.write_text(CSV)
    page.login(editor)
    page.open(change_url(dataset))

    page.find("#dataset-upload-file").send_keys(str(file))
    page.find("#dataset-upload-go").click()
    page.wait_for(".messagelist", text="2 case(s) added from arith.csv: revision 1.")
    rows = page.find_all("#case-table .case-row")
    assert [cell(r, "input").text for r in rows] == ["What is 3x5?", "What is 2x2?"]
    assert page.find("#dataset-count").text == "2"

    first = rows[0]
    first.find_element(By.CSS_SELECTOR, ".case-edit").click()
    retype(cell(first, "regex").find_element(By.CSS_SELECTOR, "textarea"), "(unclosed")
    first.find_element(By.CSS_SELECTOR, ".case-save").click()
    error = page.wait_for('.case-cell[data-field="regex"].errors .case-errors li')
    assert "regular expression" in error.text
    assert page.find("#dataset-revision").text == "1"  # nothing saved
    page.shot("dataset-case-error")

    retype(cell(first, "regex").find_element(By.CSS_SELECTOR, "textarea"), "^1[0-9]$")
    retype(cell(first, "output").find_element(By.CSS_SELECTOR, "textarea"), "fifteen")
    first.find_element(By.CSS_SELECTOR, ".case-save").click()
    revision_shown(page, 2)
    assert page.find("#case-status").text == "Saved: revision 2."
    assert page.find(".field-revision .readonly").text == "2"  # the form's, above
    assert cell(first, "output").text == "fifteen"
    assert not first.find_elements(By.CSS_SELECTOR, "textarea")
    page.shot("dataset-case-saved")
    dataset.refresh_from_db()
    assert [c.expected for c in dataset_cases(dataset)] == [
        {"output": "fifteen", "contains": ["15"], "regex": "^1[0-9]$"},
        {"output": "4", "contains": ["4"]},
    ]

    Select(page.find("#dataset-revision-select")).select_by_value("1")
    page.wait_for("#dataset-readonly", text="An older revision: read only.")
    assert cell(page.find("#case-table .case-row"), "output").text == "15"
    assert page.find_all(".case-edit") == []


@BROWSER
def test_a_run_is_added_to_a_dataset_from_its_page_with_the_expected_output_edited(
    page: Page, editor: Any, env: Any, admin_user: Any, calculator: Agent
) -> None:
    dataset = dataset_with(admin_user, env, name="arith")
    answer = client_for(editor).post(
        f"/v1/agents/{calculator.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 3x5?"}]},
        format="json",
    )
    run = Run.objects.get(pk=answer.headers["X-Run-Id"])
    page.login(editor)
    page.open(reverse("admin:agents_run_change", args=[run.pk]))

    expected = page.find("#run-add-case-form textarea")
    assert expected.get_property("value") == run.output
    assert Select(page.find("#run-add-case-form select")).first_selected_option.text == "arith"
    retype(expected, "15")
    page.find("#run-add-case-go").click()

    page.wait_for(".messagelist", text="Added to 'arith' as case 1: revision 1.")
    page.shot("run-added-to-dataset")
    dataset.refresh_from_db()
    case = dataset_cases(dataset).get()
    assert (case.source_run_id, case.expected) == (run.pk, {"output": "15"})
    page.find("#run-feedback-comment").send_keys("Right, and short.")
    page.find("#run-thumb-up").click()
    row = page.wait_for('.run-feedback-row[data-user="editor"]')
    assert "Right, and short." in row.text
    page.driver.execute_script("arguments[0].scrollIntoView()", page.find("#run-feedback"))
    page.shot("run-feedback")


@BROWSER
def test_thumbs_and_add_to_dataset_under_a_playground_answer(
    page: Page, editor: Any, env: Any, admin_user: Any, calculator: Agent
) -> None:
    dataset = dataset_with(admin_user, env, name="arith")
    page.login(editor)
    page.open(reverse("admin:agents_agent_playground", args=[calculator.pk]))

    page.find("#playground-message").send_keys("What is 3x5?", Keys.ENTER)
    thumbs = page.wait_for(".pg-answer .pg-thumb-down")
    answer = page.find(".pg-answer")
    run = Run.objects.get(pk=answer.get_attribute("data-run-id"))
    answer.find_element(By.CSS_SELECTOR, ".pg-feedback-comment").send_keys("Wordy.")
    thumbs.click()
    page.wait_for(".pg-feedback-said", text="Feedback saved.")
    assert "pg-thumb-chosen" in (thumbs.get_attribute("class") or "")
    feedback = RunFeedback.objects.get(run=run)
    assert (feedback.user, feedback.score, feedback.comment) == (editor, -1, "Wordy.")

    answer.find_element(By.CSS_SELECTOR, ".pg-add-case summary").click()
    expected = answer.find_element(By.CSS_SELECTOR, ".pg-case-expected")
    assert "15" in expected.get_property("value")
    retype(expected, "15")
    answer.find_element(By.CSS_SELECTOR, ".pg-case-add").click()
    said = page.wait_for(".pg-case-said", text="Added to 'arith'")
    assert (
        said.find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(change_url(dataset))
    )
    page.shot("playground-feedback-and-case")
    dataset.refresh_from_db()
    case = dataset_cases(dataset).get()
    assert (case.source_run_id, case.expected) == (run.pk, {"output": "15"})
    assert case.input == {"messages": [{"role": "user", "content": "What is 3x5?"}]}


@BROWSER
def test_no_add_to_dataset_without_a_dataset_the_user_may_edit(
    page: Page, env: Any, admin_user: Any, calculator: Agent
) -> None:
    dataset_with(admin_user, env, name="arith")
    invoker = staff("invoker", env, Action.READ, Action.INVOKE)  # no EDIT
    page.login(invoker)
    page.open(reverse("admin:agents_agent_playground", args=[calculator.pk]))

    page.find("#playground-message").send_keys("What is 3x5?", Keys.ENTER)
    page.wait_for(".pg-answer .pg-thumb-up")
    assert page.find_all(".pg-add-case") == []
    assert Dataset.objects.get(name="arith").revision == 0
