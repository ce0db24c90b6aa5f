"""A file of cases uploaded on a dataset's admin page (agents/evals/uploads.py, through the
admin's upload view): one new revision, or the file's errors shown and nothing added."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agents.access.permissions import Action
from agents.evals.files import EXTENSIONS
from agents.evals.selectors import dataset_cases
from agents.models import DatasetCase
from tests.support.datasets_admin import change_url, dataset_with, signed_in, staff, upload_url


def jsonl(*cases: Any) -> bytes:
    return "".join(json.dumps(c) + "\n" for c in cases).encode()


def upload(browser: Client, dataset: Any, name: str, content: bytes) -> list[str]:
    """What the dataset's page says after the upload (its messages)."""
    file = SimpleUploadedFile(name, content)
    answer = browser.post(upload_url(dataset), {"file": file}, follow=True)
    assert answer.redirect_chain == [(change_url(dataset), 302)]
    return [str(m) for m in answer.context["messages"]]


GOOD = jsonl(
    {"input": "What is 3x5?", "expected": {"output": "15"}},
    {"input": "What is 2x2?", "expected": {"contains": ["4"]}},
)


def test_a_file_of_cases_adds_them_as_one_new_revision(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 1x1?")
    editor = signed_in(staff("editor", env, Action.READ, Action.EDIT))

    said = upload(editor, dataset, "cases.jsonl", GOOD)

    assert said == ["2 case(s) added from cases.jsonl: revision 2."]
    dataset.refresh_from_db()
    assert dataset.revision == 2
    assert [c.expected for c in dataset_cases(dataset)][1:] == [
        {"output": "15"},
        {"contains": ["4"]},
    ]


def test_a_csv_file_reads_its_columns_as_the_cases_fields(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env)
    csv = b"input,expected.output,expected.contains\nWhat is 3x5?,15,15\nWhat is 2x2?,4,4\n"

    said = upload(signed_in(admin_user), dataset, "arith.csv", csv)

    assert said == ["2 case(s) added from arith.csv: revision 1."]
    dataset.refresh_from_db()
    assert [c.expected for c in dataset_cases(dataset)] == [
        {"output": "15", "contains": ["15"]},
        {"output": "4", "contains": ["4"]},
    ]


def test_a_bad_file_says_which_case_and_field_and_adds_nothing(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 1x1?")
    bad = jsonl(
        {"input": "What is 3x5?"},
        {"input": "What is 2x2?", "expected": {"regex": "(unclosed"}},
    )

    said = upload(signed_in(admin_user), dataset, "cases.jsonl", bad)

    assert len(said) == 1
    assert said[0].startswith("cases.jsonl: line 2, expected.regex: not a regular expression")
    dataset.refresh_from_db()
    assert dataset.revision == 1
    assert DatasetCase.objects.filter(dataset=dataset).count() == 1


def test_no_file_or_an_unreadable_one_is_said_and_adds_nothing(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 1x1?")
    browser = signed_in(admin_user)

    none = browser.post(upload_url(dataset), {}, follow=True)
    assert [str(m) for m in none.context["messages"]] == [
        "Choose a file of cases (JSONL, CSV or YAML) to upload."
    ]
    said = upload(browser, dataset, "cases.jsonl", b"{not json\n")
    assert said[0].startswith("cases.jsonl: line 1")
    said = upload(browser, dataset, "cases.txt", GOOD)
    assert said == ["cases.txt: 'cases.txt' is not a dataset file: name it " + EXTENSIONS]
    dataset.refresh_from_db()
    assert dataset.revision == 1


def test_without_edit_on_the_environment_the_upload_is_refused(
    env: Any, other_env: Any, admin_user: Any
) -> None:
    dataset = dataset_with(admin_user, env, "What is 1x1?")
    reader = signed_in(staff("reader", env, Action.READ))
    stranger = signed_in(staff("stranger", other_env, *Action))
    file = {"file": SimpleUploadedFile("cases.jsonl", GOOD)}

    assert reader.post(upload_url(dataset), file).status_code == 403
    file = {"file": SimpleUploadedFile("cases.jsonl", GOOD)}
    assert stranger.post(upload_url(dataset), file).status_code == 404
    dataset.refresh_from_db()
    assert dataset.revision == 1
