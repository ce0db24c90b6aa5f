"""Datasets in the admin (agents/evals/admin.py): listed, added, renamed and deleted with the
API's permissions (READ, CREATE, EDIT, DELETE held on the dataset's environment), and a
revision's cases shown on the change page."""

from __future__ import annotations

import html
from typing import Any

from django.urls import reverse

from agents.access.permissions import Action
from agents.evals.selectors import dataset_cases
from agents.evals.services import case_replace
from agents.models import AliasGate, Dataset, Experiment
from tests.support.datasets_admin import change_url, dataset_with, signed_in, staff

LIST = reverse("admin:agents_dataset_changelist")
ADD = reverse("admin:agents_dataset_add")


def text_of(page: Any) -> str:
    return html.unescape(page.content.decode())


def test_the_list_shows_each_readable_dataset_with_its_revision_and_cases(
    env: Any, other_env: Any, admin_user: Any
) -> None:
    dataset_with(admin_user, env, "What is 3x5?", "What is 2x2?", name="arith")
    dataset_with(admin_user, other_env, "Hello?", name="elsewhere")
    reader = staff("reader", env, Action.READ)

    page = signed_in(reader).get(LIST)

    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [(d.name, d.revision, d.case_count) for d in rows] == [("arith", 1, 2)]
    assert "elsewhere" not in text_of(page)
    everything = signed_in(admin_user).get(LIST).context["cl"].result_list
    assert sorted(d.name for d in everything) == ["arith", "elsewhere"]
    nothing = signed_in(staff("nobody", other_env)).get(LIST)
    assert list(nothing.context["cl"].result_list) == []


def test_a_dataset_is_added_only_in_an_environment_where_the_user_holds_create(
    env: Any, other_env: Any
) -> None:
    creator = staff("creator", env, Action.READ, Action.CREATE)
    browser = signed_in(creator)

    form = browser.get(ADD).context["adminform"].form
    assert list(form.fields["environment"].queryset) == [env]
    refused = browser.post(
        ADD, {"environment": other_env.pk, "name": "x", "agent_type": "tool", "description": ""}
    )
    assert "environment" in refused.context["adminform"].form.errors
    added = browser.post(
        ADD, {"environment": env.pk, "name": "smoke", "agent_type": "task", "description": "d"}
    )

    assert added.status_code == 302
    dataset = Dataset.objects.get(name="smoke")
    assert added["Location"] == change_url(dataset)  # where its cases are added
    assert (dataset.environment, dataset.agent_type, dataset.revision) == (env, "task", 0)
    assert dataset.created_by == creator
    assert signed_in(staff("reader", env, Action.READ)).get(ADD).status_code == 403


def test_a_bad_or_taken_name_shows_at_the_name_field_and_adds_nothing(
    env: Any, admin_user: Any
) -> None:
    dataset_with(admin_user, env, name="smoke")
    browser = signed_in(admin_user)
    base = {"environment": env.pk, "agent_type": "tool", "description": ""}

    bad = browser.post(ADD, {**base, "name": "no spaces"}).context["adminform"].form.errors
    taken = browser.post(ADD, {**base, "name": "SMOKE"}).context["adminform"].form.errors

    assert "name" in bad
    assert "already exists" in str(taken)
    assert Dataset.objects.count() == 1


def test_edit_renames_and_read_alone_shows_the_page_read_only(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    editor = staff("editor", env, Action.READ, Action.EDIT)
    reader = staff("reader", env, Action.READ)

    seen = signed_in(reader).get(change_url(dataset))
    assert seen.status_code == 200
    assert b'name="_save"' not in seen.content
    assert b'id="dataset-upload"' not in seen.content
    assert b"case-edit" not in seen.content
    assert "What is 3x5?" in text_of(seen)  # the cases, read only
    refused = signed_in(reader).post(change_url(dataset), {"name": "renamed"})
    assert refused.status_code == 403

    page = signed_in(editor).get(change_url(dataset))
    assert b'id="dataset-upload"' in page.content
    assert b"case-edit" in page.content
    saved = signed_in(editor).post(change_url(dataset), {"name": "renamed", "description": "d"})
    assert saved.status_code == 302
    dataset.refresh_from_db()
    assert (dataset.name, dataset.description, dataset.revision) == ("renamed", "d", 1)


def test_an_older_revision_shows_its_own_cases_read_only(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    old = dataset_cases(dataset).get()
    case_replace(user=admin_user, dataset=dataset, case_id=old.pk, case={"input": "What is 4x4?"})
    browser = signed_in(admin_user)

    now = text_of(browser.get(change_url(dataset)))
    before = browser.get(change_url(dataset), {"revision": "1"})

    assert "What is 4x4?" in now
    assert "What is 3x5?" not in now
    assert "What is 3x5?" in text_of(before)
    assert before.context["cases_revision"] == 1
    assert not before.context["cases_editable"]
    assert b"case-edit" not in before.content
    assert "An older revision: read only." in text_of(before)
    beyond = browser.get(change_url(dataset), {"revision": "9"})
    assert beyond.context["cases_revision"] == 2  # none such: the current one


def test_delete_needs_delete_on_the_environment(env: Any, admin_user: Any) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    delete = reverse("admin:agents_dataset_delete", args=[dataset.pk])
    editor = staff("editor", env, Action.READ, Action.EDIT)
    deleter = staff("deleter", env, Action.READ, Action.DELETE)

    assert signed_in(editor).post(delete, {"post": "yes"}).status_code == 403
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    asked = signed_in(deleter).get(delete)
    assert asked.status_code == 200
    assert "Cases of all revisions: 1" in text_of(asked)
    done = signed_in(deleter).post(delete, {"post": "yes"})

    assert done.status_code == 302
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


def test_a_stranger_to_the_environment_finds_no_dataset(
    env: Any, other_env: Any, admin_user: Any
) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    stranger = signed_in(staff("stranger", other_env, *Action))

    page = stranger.get(change_url(dataset))

    assert page.status_code == 302  # the admin's "doesn't exist" goes back to the index
    assert stranger.get(change_url(dataset), follow=True).status_code == 200
    assert "What is 3x5?" not in text_of(stranger.get(change_url(dataset), follow=True))


def test_a_dataset_an_alias_gate_uses_is_not_deleted_and_the_page_says_why(
    env: Any, admin_user: Any, make_agent: Any
) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    AliasGate.objects.create(
        agent=make_agent("calc"), name="prod", dataset=dataset, scorers=[], thresholds={}
    )
    delete = reverse("admin:agents_dataset_delete", args=[dataset.pk])

    refused = signed_in(admin_user).post(delete, {"post": "yes"}, follow=True)

    assert refused.redirect_chain == [(change_url(dataset), 302)]
    [said] = [str(m) for m in refused.context["messages"]]
    assert "gates an alias" in said
    assert dataset_cases(Dataset.objects.get(pk=dataset.pk)).count() == 1


def test_the_cases_are_shown_a_hundred_a_page_in_a_bounded_number_of_queries(
    env: Any, admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    dataset = dataset_with(admin_user, env, *(f"Question {i}" for i in range(1, 151)))
    browser = signed_in(admin_user)
    browser.get(change_url(dataset))  # the session and the admin's caches warmed

    with django_assert_max_num_queries(15):
        first = browser.get(change_url(dataset))
    second = browser.get(change_url(dataset), {"page": "2"})

    assert len(first.context["cases_rows"]) == 100
    assert first.context["cases_count"] == 150
    rows = second.context["cases_rows"]
    assert [r["case"].position for r in (rows[0], rows[-1])] == [101, 150]
    assert "page 2 of 2" in text_of(second)


def test_the_page_lists_the_experiments_on_the_dataset_with_the_revision_each_ran(
    env: Any, admin_user: Any, make_agent: Any
) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    shown = make_agent("calc")
    Experiment.objects.create(
        agent=shown,
        version=shown.versions.get(),
        dataset=dataset,
        revision=1,
        scorers=[{"name": "exact"}],
        scorers_key="k",
        status="completed",
        summary={"passRate": 0.5},
    )
    reader = staff("reader", env, Action.READ)

    page = signed_in(reader).get(change_url(dataset))

    rows = page.context["experiments"]
    assert [(r["experiment"].agent, r["pass_rate"]) for r in rows] == [(shown, "50.0%")]
    experiment = rows[0]["experiment"]
    assert rows[0]["url"] == reverse(
        "admin:agents_agent_experiment", args=[shown.pk, experiment.pk]
    )
    assert 'href="?revision=1"' in page.content.decode()
