"""An agent's experiments in the admin (agents/evals/admin_experiments.py): who sees them,
who may start and cancel one, the form's errors at their field, an experiment's page and
the JSON its progress bar polls. In Chromium: test_experiments_browser.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/support, named again as parameters)
from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.evals.services import cases_add, dataset_create
from agents.models import Agent, Experiment, ExperimentResult, Run
from agents.services.versions import version_add
from tests.factories import CONFIGS, UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.support.admin import REMOTE_CALCULATOR
from tests.support.experiments import arithmetic, ran, scripted_openai  # noqa: F401

# The cases' runs run in this process's runner threads, which see committed rows only.
COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def staff(name: str, env: Any, *actions: Action) -> Any:
    user = UserFactory(username=name, is_staff=True)
    for action in actions:
        grant(user, action, env)
    user.user_permissions.add(
        Permission.objects.get(codename="view_agent", content_type__model="agent")
    )
    return user


@pytest.fixture
def reader(env: Any) -> Any:
    return staff("reader", env, Action.READ)


@pytest.fixture
def invoker(env: Any) -> Any:
    return staff("invoker", env, Action.READ, Action.INVOKE)


@pytest.fixture
def calc(make_agent: Any) -> Agent:
    return make_agent("calc", config=REMOTE_CALCULATOR)


def as_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def listing(agent: Agent) -> str:
    return reverse("admin:agents_agent_experiments", args=[agent.pk])


def page_of(experiment: Experiment) -> str:
    return reverse("admin:agents_agent_experiment", args=[experiment.agent_id, experiment.pk])


def form_data(dataset: Any, **changes: Any) -> dict[str, Any]:
    data = {
        "version": "latest",
        "dataset": str(dataset.pk),
        "revision": "",
        "scorers": '["exact"]',
        "repetitions": "1",
        "concurrency": "2",
    }
    return {**data, **changes}


def field_errors(response: Any) -> dict[str, list[str]]:
    return {name: list(errors) for name, errors in response.context["form"].errors.items()}


# ---------------------------------------------------------------- starting one


def test_an_invoker_starts_an_experiment_and_lands_on_its_page(
    invoker: Any, calc: Agent, env: Any
) -> None:
    dataset = arithmetic(invoker, env, cases=3)
    client = as_client(invoker)
    form = client.get(listing(calc))
    assert form.status_code == 200
    assert 'id="experiment-form"' in form.content.decode()

    response = client.post(listing(calc), form_data(dataset, repetitions="2"))

    experiment = Experiment.objects.get()
    assert response.status_code == 302
    assert response["Location"] == page_of(experiment)
    assert (experiment.requester, experiment.revision, experiment.total) == (invoker, 1, 6)
    assert experiment.scorers == [{"name": "exact"}]
    assert ExperimentResult.objects.filter(experiment=experiment).count() == 6


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"scorers": '["nope"]'}, "scorers", "unknown scorer"),
        ({"scorers": "[exact"}, "scorers", "Enter a valid JSON"),
        ({"scorers": '"exact"'}, "scorers", "non-empty list"),
        ({"repetitions": "0"}, "repetitions", "from 1 to"),
        ({"concurrency": "999"}, "concurrency", "from 1 to"),
        ({"revision": "7"}, "revision", "revisions 1 to 1"),
        ({"version": "9"}, "version", "Select a valid choice"),
    ],
)
def test_bad_input_shows_at_its_field_and_writes_nothing(
    invoker: Any, calc: Agent, env: Any, changes: dict[str, str], field: str, message: str
) -> None:
    dataset = arithmetic(invoker, env)

    response = as_client(invoker).post(listing(calc), form_data(dataset, **changes))

    assert response.status_code == 200
    errors = field_errors(response)
    assert list(errors) == [field]
    assert message in errors[field][0]
    assert 'class="form-row field-' + field + ' errors"' in response.content.decode()
    assert not Experiment.objects.exists()
    assert not ExperimentResult.objects.exists()


def test_a_dataset_of_another_type_or_environment_is_not_offered(
    invoker: Any, calc: Agent, env: Any, other_env: Any
) -> None:
    grant(invoker, Action.READ, other_env)
    elsewhere = arithmetic(invoker, other_env, name="elsewhere")
    task_cases = dataset_create(user=invoker, environment=env, name="tasks", agent_type="task")
    client = as_client(invoker)

    offered = client.get(listing(calc)).context["form"].fields["dataset"].queryset
    assert list(offered) == []
    for dataset in (elsewhere, task_cases):
        response = client.post(listing(calc), form_data(dataset))
        assert "dataset" in field_errors(response)
    assert not Experiment.objects.exists()


def test_a_task_case_that_does_not_fit_the_version_shows_at_the_dataset(
    invoker: Any, make_agent: Any, env: Any
) -> None:
    summary = make_agent("summary", "task", config=CONFIGS["task"])
    dataset = dataset_create(user=invoker, environment=env, name="texts", agent_type="task")
    cases_add(
        user=invoker,
        dataset=dataset,
        cases=[
            {"input": {"inputs": {"text": "fine", "audience": "kids"}}},
            {"input": {"inputs": {"txt": "typo"}}},
        ],
    )

    response = as_client(invoker).post(listing(summary), form_data(dataset))

    errors = field_errors(response)
    assert list(errors) == ["dataset"]
    assert errors["dataset"][0].startswith("dataset.cases.2.input.inputs")
    assert not Experiment.objects.exists()


def test_a_reader_sees_no_form_and_may_not_start_one(reader: Any, calc: Agent, env: Any) -> None:
    dataset = arithmetic(reader, env)
    client = as_client(reader)

    page = client.get(listing(calc))
    refused = client.post(listing(calc), form_data(dataset))

    assert page.status_code == 200
    assert 'id="experiment-form"' not in page.content.decode()
    assert refused.status_code == 403
    assert not Experiment.objects.exists()


def test_a_stranger_gets_404_for_every_experiment_page(
    env: Any, calc: Agent, invoker: Any, db: Any
) -> None:
    dataset = arithmetic(invoker, env)
    as_client(invoker).post(listing(calc), form_data(dataset))
    experiment = Experiment.objects.get()
    stranger = staff("stranger", env)  # staff, with no permission on the environment
    client = as_client(stranger)
    args = [calc.pk, experiment.pk]

    urls = [
        listing(calc),
        page_of(experiment),
        reverse("admin:agents_agent_experiment_progress", args=args),
        reverse("admin:agents_agent_experiments_compare", args=[calc.pk])
        + f"?a={experiment.pk}&b={experiment.pk}",
    ]
    assert [client.get(url).status_code for url in urls] == [404] * 4
    cancel = reverse("admin:agents_agent_experiment_cancel", args=args)
    assert client.post(cancel).status_code == 404
    assert Experiment.objects.get().status == "queued"


def test_an_experiment_of_another_agent_is_not_found_under_this_one(
    invoker: Any, calc: Agent, make_agent: Any, env: Any
) -> None:
    other = make_agent("other", config=REMOTE_CALCULATOR)
    dataset = arithmetic(invoker, env)
    as_client(invoker).post(listing(other), form_data(dataset))
    experiment = Experiment.objects.get()

    url = reverse("admin:agents_agent_experiment", args=[calc.pk, experiment.pk])
    assert as_client(invoker).get(url).status_code == 404
    assert as_client(invoker).get(page_of(experiment)).status_code == 200


# ---------------------------------------------------------------- cancel


def test_cancel_needs_invoke_and_ends_a_queued_experiment(
    invoker: Any, reader: Any, calc: Agent, env: Any
) -> None:
    dataset = arithmetic(invoker, env)
    as_client(invoker).post(listing(calc), form_data(dataset))
    experiment = Experiment.objects.get()
    cancel = reverse("admin:agents_agent_experiment_cancel", args=[calc.pk, experiment.pk])
    page = as_client(reader).get(page_of(experiment)).content.decode()
    assert 'id="experiment-progress"' in page
    assert 'id="experiment-cancel"' not in page  # a reader gets no button

    assert as_client(reader).post(cancel).status_code == 403
    assert as_client(invoker).get(cancel).status_code == 405
    assert Experiment.objects.get().status == "queued"
    response = as_client(invoker).post(cancel, follow=True)

    assert response.redirect_chain == [(page_of(experiment), 302)]
    experiment.refresh_from_db()
    assert experiment.status == "canceled"
    statuses = set(experiment.results.values_list("status", flat=True))
    assert statuses == {"canceled"}
    again = as_client(invoker).post(cancel, follow=True)
    assert "already ended" in again.content.decode()
    assert 'id="experiment-cancel"' not in again.content.decode()


# ---------------------------------------------------------------- after it ran


@COMMITTED
@pytest.mark.usefixtures("reseed_after_module")
def test_an_experiments_page_shows_its_summary_and_each_cases_scores(
    scripted_openai: FakeOpenAI, invoker: Any, reader: Any, calc: Agent, env: Any
) -> None:
    dataset = arithmetic(invoker, env, cases=3)
    fast = {"name": "max_latency_ms", "max": 600_000, "label": "fast"}
    experiment = ran(
        scripted_openai, invoker, calc, dataset, ["4", "131", "4"], scorers=["exact", fast]
    )
    client = as_client(reader)

    response = client.get(page_of(experiment))
    text = response.content.decode()

    assert response.status_code == 200
    assert 'id="experiment-summary"' in text
    assert 'data-scorer="exact"' in text
    assert text.count('class="result-passed"') == 2
    assert text.count('class="result-failed"') == 1
    assert 'title="expected ' in text  # the reason of a score, on hover
    assert response.context["scorer_names"] == ["exact", "fast"]  # a label keys its scores
    assert all(r["scores"][1]["passed"] for r in response.context["results"])
    assert 'data-scorer="fast"' in text
    runs = list(Run.objects.filter(protocol="eval").order_by("started_at"))
    for run in runs:
        assert reverse("admin:agents_run_change", args=[run.pk]) in text
    failed = client.get(page_of(experiment), {"only": "failed"}).content.decode()
    assert (failed.count('class="result-failed"'), failed.count('class="result-passed"')) == (1, 0)
    assert "What is 12 times 11?" in failed
    body = client.get(
        reverse("admin:agents_agent_experiment_progress", args=[calc.pk, experiment.pk])
    ).json()
    assert (body["status"], body["progress"], body["ended"]) == (
        "completed",
        {"done": 3, "total": 3},
        True,
    )
    assert body["passRate"] == pytest.approx(2 / 3, abs=1e-3)


@COMMITTED
@pytest.mark.usefixtures("reseed_after_module")
def test_the_list_shows_each_experiments_figures_and_charts_them(
    scripted_openai: FakeOpenAI,
    invoker: Any,
    calc: Agent,
    env: Any,
    django_assert_max_num_queries: Any,
) -> None:
    dataset = arithmetic(invoker, env)
    first = ran(scripted_openai, invoker, calc, dataset, ["4", "132"])
    second = ran(scripted_openai, invoker, calc, dataset, ["5", "132"])
    client = as_client(invoker)

    with django_assert_max_num_queries(14):
        response = client.get(listing(calc))
    text = response.content.decode()

    rows = response.context["experiments"]
    assert [r["experiment"].pk for r in rows] == [second.pk, first.pk]  # newest first
    assert [r["pass_rate"] for r in rows] == ["50.0%", "100.0%"]
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox') == 3
    for css in ("chart-pass-rate", "chart-latency", "chart-cost"):
        assert f'class="{css}"' in text
    assert text.count('class="chart-dot"') >= 4  # pass rate and latency of both
    assert page_of(first) in text
    assert 'id="experiments-compare"' in text


def test_a_hostile_version_label_is_escaped_in_the_list(
    invoker: Any, admin_user: Any, calc: Agent, env: Any
) -> None:
    version_add(
        user=admin_user, agent=calc, config=None, version_label="<img src=x onerror=alert(1)>"
    )
    dataset = arithmetic(invoker, env)
    as_client(invoker).post(listing(calc), form_data(dataset))
    Experiment.objects.update(summary={"passRate": 0.5, "latencyMs": {"p50": 1, "p95": 2}})

    text = as_client(invoker).get(listing(calc)).content.decode()

    assert "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    json.dumps(text)  # the page rendered whole


@COMMITTED
@pytest.mark.usefixtures("reseed_after_module")
def test_the_tokens_a_judge_spent_show_apart_from_the_runs(
    scripted_openai: FakeOpenAI, invoker: Any, calc: Agent, env: Any
) -> None:
    dataset = arithmetic(invoker, env)
    # The offline model judges, deterministically.
    judge = {"name": "judge", "model": "local.demo-v1", "rubric": "Is it the right number?"}
    experiment = ran(scripted_openai, invoker, calc, dataset, ["4", "132"], scorers=[judge])

    text = as_client(invoker).get(page_of(experiment)).content.decode()

    judged = (experiment.summary or {})["judgeTokensUsage"]
    assert judged["total_tokens"] > 0
    assert 'id="summary-judge-tokens"' in text
    assert f"/ {judged['total_tokens']}</td>" in text
