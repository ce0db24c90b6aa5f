"""A run into a dataset and thumbs on it, from the run's admin page and from the playground
(agents/evals/from_runs.py): through case_from_run and feedback_set, for whoever may read
the run, into a dataset of its environment and agent type the user may EDIT."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action
from agents.evals.selectors import dataset_cases
from agents.models import Agent, Dataset, Run, RunFeedback
from tests.conftest import client_for
from tests.support.datasets_admin import dataset_with, signed_in, staff

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}


@pytest.fixture
def asker(env: Any) -> Any:
    """Staff who may invoke, and edit datasets, in the default environment."""
    return staff("asker", env, Action.READ, Action.INVOKE, Action.EDIT)


@pytest.fixture
def calc(make_agent: Any) -> Agent:
    return make_agent("calc", "tool")


@pytest.fixture
def run(asker: Any, calc: Agent) -> Run:
    answer = client_for(asker).post(
        f"/v1/agents/{calc.pk}/versions/latest/invoke", ASK, format="json"
    )
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=answer.headers["X-Run-Id"])


@pytest.fixture
def smoke(env: Any, admin_user: Any) -> Dataset:
    return dataset_with(admin_user, env, "What is 1x1?")


def run_page(run: Run) -> str:
    return reverse("admin:agents_run_change", args=[run.pk])


def text_of(page: Any) -> str:
    return html.unescape(page.content.decode())


# ---------------------------------------------------------------- the run's page


def test_the_run_page_offers_thumbs_and_its_answer_as_a_case_of_a_matching_dataset(
    env: Any, other_env: Any, admin_user: Any, asker: Any, run: Run, smoke: Dataset
) -> None:
    dataset_with(admin_user, env, name="summaries", agent_type="task")
    dataset_with(admin_user, other_env, name="elsewhere")

    page = signed_in(asker).get(run_page(run))

    assert page.status_code == 200
    form = page.context["add_case_form"]
    assert list(form.fields["dataset"].queryset) == [smoke]  # its environment, its type
    assert form.initial["expected_output"] == run.output
    assert "15" in run.output
    assert 'id="run-thumb-up"' in text_of(page)
    assert "No feedback yet." in text_of(page)


def test_thumbs_on_the_run_page_are_saved_and_shown_with_who_and_the_comment(
    asker: Any, run: Run
) -> None:
    browser = signed_in(asker)

    browser.post(reverse("admin:agents_run_feedback", args=[run.pk]), {"score": "1"}, follow=True)
    done = browser.post(
        reverse("admin:agents_run_feedback", args=[run.pk]),
        {"score": "-1", "comment": "Too long."},
        follow=True,
    )

    assert [str(m) for m in done.context["messages"]] == ["Feedback saved."]
    feedback = RunFeedback.objects.get(run=run)
    assert (feedback.user, feedback.score, feedback.comment) == (asker, -1, "Too long.")
    shown = text_of(done)
    assert 'data-user="asker"' in shown
    assert "👎" in shown
    assert "Too long." in shown
    refused = browser.post(
        reverse("admin:agents_run_feedback", args=[run.pk]), {"score": "0"}, follow=True
    )
    assert "Choose 👍 or 👎" in str(next(iter(refused.context["messages"])))
    assert RunFeedback.objects.get(run=run).score == -1


def test_add_to_dataset_on_the_run_page_adds_the_run_with_the_expected_output_edited(
    asker: Any, run: Run, smoke: Dataset
) -> None:
    added = signed_in(asker).post(
        reverse("admin:agents_run_add_case", args=[run.pk]),
        {"dataset": smoke.pk, "expected_output": "15"},
        follow=True,
    )

    [said] = [html.unescape(str(m)) for m in added.context["messages"]]
    assert said.startswith(f"Added to '{smoke.name}' as case 2: revision 2.")
    assert reverse("admin:agents_dataset_change", args=[smoke.pk]) in said  # a link to it
    smoke.refresh_from_db()
    case = dataset_cases(smoke).last()
    assert case is not None
    assert case.source_run_id == run.pk
    assert case.input == ASK
    assert case.expected == {"output": "15"}


def test_without_edit_no_dataset_is_offered_and_a_posted_one_is_refused(
    env: Any, calc: Agent, run: Run, smoke: Dataset
) -> None:
    auditor = staff("auditor", env, Action.READ, Action.AUDIT)  # reads the run, edits nothing
    browser = signed_in(auditor)

    page = browser.get(run_page(run))
    assert 'id="run-add-case-none"' in text_of(page)
    refused = browser.post(
        reverse("admin:agents_run_add_case", args=[run.pk]),
        {"dataset": smoke.pk, "expected_output": "15"},
        follow=True,
    )
    assert "Select a valid choice" in str(next(iter(refused.context["messages"])))
    smoke.refresh_from_db()
    assert smoke.revision == 1


def test_a_run_the_user_may_not_read_has_no_forms(other_env: Any, run: Run, smoke: Dataset) -> None:
    stranger = signed_in(staff("stranger", other_env, *Action))

    for name, data in (
        ("admin:agents_run_feedback", {"score": "1"}),
        ("admin:agents_run_add_case", {"dataset": smoke.pk}),
    ):
        assert stranger.post(reverse(name, args=[run.pk]), data).status_code == 404
    assert not RunFeedback.objects.exists()
    smoke.refresh_from_db()
    assert smoke.revision == 1


# ---------------------------------------------------------------- the playground


def playground_url(name: str, run: Run) -> str:
    return reverse(f"admin:agents_agent_playground_{name}", args=[run.agent_id, run.pk])


def post(browser: Client, url: str, body: Any) -> Any:
    return browser.post(url, body, content_type="application/json")


def test_the_playground_page_names_the_datasets_its_answers_may_join(
    asker: Any, calc: Agent, smoke: Dataset
) -> None:
    page = signed_in(asker).get(reverse("admin:agents_agent_playground", args=[calc.pk]))

    settings = page.context["settings"]
    assert settings["datasets"] == [{"id": str(smoke.pk), "name": "smoke"}]
    assert settings["feedbackUrl"].endswith(f"/runs/{settings['noRun']}/feedback/")


def test_playground_thumbs_and_add_to_dataset_write_through_the_services(
    asker: Any, run: Run, smoke: Dataset
) -> None:
    browser = signed_in(asker)

    thumbs = post(browser, playground_url("feedback", run), {"score": 1, "comment": "Right."})
    added = post(
        browser, playground_url("case", run), {"datasetId": str(smoke.pk), "expectedOutput": ""}
    )

    assert thumbs.json() == {"score": 1, "comment": "Right."}
    assert RunFeedback.objects.get(run=run, user=asker).comment == "Right."
    assert added.status_code == 200, added.content
    assert added.json()["revision"] == 2
    smoke.refresh_from_db()
    case = dataset_cases(smoke).last()
    assert case is not None
    assert case.expected == {"output": run.output}  # empty: the answer as it was


def test_playground_bad_input_is_answered_at_its_field_and_writes_nothing(
    env: Any, admin_user: Any, asker: Any, run: Run, smoke: Dataset
) -> None:
    browser = signed_in(asker)
    task_set = dataset_with(admin_user, env, name="summaries", agent_type="task")

    bad_score = post(browser, playground_url("feedback", run), {"score": 0})
    wrong_type = post(browser, playground_url("case", run), {"datasetId": str(task_set.pk)})
    not_uuid = post(browser, playground_url("case", run), {"datasetId": "x"})

    assert bad_score.status_code == 400
    assert bad_score.json()["detail"][0]["loc"] == ["body", "score"]
    assert wrong_type.status_code == 400
    assert wrong_type.json()["detail"][0]["loc"] == ["body", "datasetId"]
    assert not_uuid.json()["detail"][0]["loc"] == ["body", "datasetId"]
    assert not RunFeedback.objects.exists()
    task_set.refresh_from_db()
    assert task_set.revision == 0


def test_another_users_playground_run_is_not_found(env: Any, run: Run, smoke: Dataset) -> None:
    other = signed_in(staff("other", env, Action.READ, Action.INVOKE, Action.EDIT))

    assert post(other, playground_url("feedback", run), {"score": 1}).status_code == 404
    case = {"datasetId": str(smoke.pk)}
    assert post(other, playground_url("case", run), case).status_code == 404
    assert not RunFeedback.objects.exists()
