"""The case table's saves (agents/evals/table_views.py): each a new revision through the
dataset services, a refused row answered at its cells with nothing written, and EDIT on the
dataset's environment asked of every save."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.access.permissions import Action
from agents.evals.selectors import dataset_cases
from agents.models import Dataset, DatasetCase
from tests.support.datasets_admin import (
    case_url,
    cases_add_url,
    cases_remove_url,
    dataset_with,
    signed_in,
    staff,
)


def post(browser: Client, url: str, body: Any) -> Any:
    return browser.post(url, body, content_type="application/json")


def row(question: str, **more: str) -> dict[str, Any]:
    return {"row": {"input": question, **more}}


@pytest.fixture
def smoke(env: Any, admin_user: Any) -> Dataset:
    return dataset_with(admin_user, env, "What is 3x5?", "What is 2x2?")


@pytest.fixture
def editor(env: Any) -> Client:
    return signed_in(staff("editor", env, Action.READ, Action.EDIT))


def questions(dataset: Dataset, revision: int | None = None) -> list[str]:
    return [c.input["messages"][0]["content"] for c in dataset_cases(dataset, revision)]


def test_a_row_added_is_the_last_case_of_a_new_revision(smoke: Dataset, editor: Client) -> None:
    answer = post(editor, cases_add_url(smoke), row("What is 7x6?", output="42", contains="42"))

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["revision"], body["count"]) == (2, 3)
    assert body["case"]["row"]["output"] == "42"
    assert body["case"]["position"] == 3
    smoke.refresh_from_db()
    assert questions(smoke) == ["What is 3x5?", "What is 2x2?", "What is 7x6?"]
    assert str(dataset_cases(smoke).last().pk) == body["case"]["id"]  # type: ignore[union-attr]


def test_a_row_replaced_keeps_its_place_and_the_revision_before_keeps_the_old(
    smoke: Dataset, editor: Client
) -> None:
    first = dataset_cases(smoke).first()
    assert first is not None

    answer = post(editor, case_url(smoke, first.pk), row("What is 3x6?", regex="^18$"))

    assert answer.status_code == 200, answer.content
    assert answer.json()["revision"] == 2
    assert answer.json()["case"]["row"]["regex"] == "^18$"
    smoke.refresh_from_db()
    assert questions(smoke) == ["What is 3x6?", "What is 2x2?"]
    assert questions(smoke, 1) == ["What is 3x5?", "What is 2x2?"]
    again = post(editor, case_url(smoke, first.pk), row("What is 3x7?"))
    assert again.status_code == 404  # replaced already: no longer in the current revision


def test_rows_removed_leave_the_rest_in_a_new_revision(smoke: Dataset, editor: Client) -> None:
    first = dataset_cases(smoke).first()
    assert first is not None

    answer = post(editor, cases_remove_url(smoke), {"ids": [str(first.pk)]})

    assert answer.status_code == 200, answer.content
    assert answer.json() == {"revision": 2, "count": 1}
    smoke.refresh_from_db()
    assert questions(smoke) == ["What is 2x2?"]
    gone = post(editor, cases_remove_url(smoke), {"ids": [str(first.pk)]})
    assert gone.status_code == 404
    assert post(editor, cases_remove_url(smoke), {"ids": []}).status_code == 400


@pytest.mark.parametrize(
    ("fields", "cell", "said"),
    [
        ({"regex": "(unclosed"}, "regex", "regular expression"),
        ({"metadata": "{not json"}, "metadata", "not valid JSON"),
        ({"toolCalls": '[{"arguments": {}}]'}, "toolCalls", "0.name"),
        ({"more": '{"outputSchema": {"type": "nonsense"}}'}, "more", "outputSchema"),
        ({"input": '[{"role": "robot", "content": "hi"}]'}, "input", "messages.0.role"),
    ],
)
def test_a_bad_row_is_refused_at_its_cell_and_writes_nothing(
    smoke: Dataset, editor: Client, fields: dict[str, str], cell: str, said: str
) -> None:
    first = dataset_cases(smoke).first()
    assert first is not None
    body = {"row": {"input": "What is 3x5?", **fields}}

    for url in (cases_add_url(smoke), case_url(smoke, first.pk)):
        answer = post(editor, url, body)
        assert answer.status_code == 400, answer.content
        [problem] = answer.json()["detail"]
        assert problem["loc"] == ["row", cell]
        assert said in problem["msg"]

    smoke.refresh_from_db()
    assert smoke.revision == 1
    assert DatasetCase.objects.filter(dataset=smoke).count() == 2


def test_without_edit_on_the_environment_no_save_is_made(
    env: Any, other_env: Any, smoke: Dataset
) -> None:
    first = dataset_cases(smoke).first()
    assert first is not None
    reader = signed_in(staff("reader", env, Action.READ))
    stranger = signed_in(staff("stranger", other_env, *Action))

    for browser, status in ((reader, 403), (stranger, 404)):
        assert post(browser, cases_add_url(smoke), row("Hi")).status_code == status
        assert post(browser, case_url(smoke, first.pk), row("Hi")).status_code == status
        assert post(browser, cases_remove_url(smoke), {"ids": [str(first.pk)]}).status_code == (
            status
        )
    smoke.refresh_from_db()
    assert smoke.revision == 1
    anonymous = post(Client(), cases_add_url(smoke), row("Hi"))
    assert anonymous.status_code in (401, 403)


def test_a_save_without_the_pages_csrf_token_is_refused(env: Any, smoke: Dataset) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff("editor", env, Action.READ, Action.EDIT))

    assert post(browser, cases_add_url(smoke), row("Hi")).status_code == 403
    smoke.refresh_from_db()
    assert smoke.revision == 1
