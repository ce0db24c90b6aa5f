"""Two experiments side by side in the admin (agents/evals/admin_compare.py): regressions
first, the filters, the pickers, and a page's queries whatever the number of cases."""

# ruff: noqa: F811 (pytest fixtures imported from tests/support, named again as parameters)
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.evals import admin_compare
from agents.evals.compare import Row, Side
from agents.models import Agent, Experiment
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.support.admin import REMOTE_CALCULATOR
from tests.support.experiments import arithmetic, ran, scripted_openai  # noqa: F401

pytestmark = [
    # The cases' runs run in this process's runner threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


@pytest.fixture
def reader(env: Any) -> Any:
    user = UserFactory(username="reader", is_staff=True)
    grant(user, Action.READ, env)
    grant(user, Action.INVOKE, env)
    user.user_permissions.add(
        Permission.objects.get(codename="view_agent", content_type__model="agent")
    )
    return user


@pytest.fixture
def calc(make_agent: Any) -> Agent:
    return make_agent("calc", config=REMOTE_CALCULATOR)


def compare_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_experiments_compare", args=[agent.pk])


def compared(client: Client, a: Experiment, b: Experiment, **query: str) -> Any:
    return client.get(compare_url(a.agent), {"a": str(a.pk), "b": str(b.pk), **query})


def changes(response: Any) -> list[tuple[int, str]]:
    return [(r["row"].position, r["change"]) for r in response.context["rows"]]


@pytest.fixture
def pair(scripted_openai: FakeOpenAI, reader: Any, calc: Agent, env: Any) -> tuple[Any, Any]:
    """A: case 1 wrong, 2 and 3 right; B: case 1 right, 2 wrong, 3 right."""
    dataset = arithmetic(reader, env, cases=3)
    a = ran(scripted_openai, reader, calc, dataset, ["5", "132", "4"])
    b = ran(scripted_openai, reader, calc, dataset, ["4", "131", "4"])
    return a, b


def test_regressions_come_first_then_improvements_then_the_rest(
    pair: tuple[Experiment, Experiment], reader: Any
) -> None:
    a, b = pair
    client = Client()
    client.force_login(reader)

    response = compared(client, a, b)
    text = response.content.decode()

    assert response.status_code == 200
    assert changes(response) == [(2, "regression"), (1, "improvement"), (3, "same")]
    assert text.index('data-change="regression"') < text.index('data-change="improvement"')
    assert "131" in text
    assert "132" in text
    options = {key: count for key, _, count in response.context["show_options"]}
    assert options == {"all": 3, "regressions": 1, "improvements": 1, "changed": 2}


def test_the_filters_show_only_what_they_name(
    pair: tuple[Experiment, Experiment], reader: Any
) -> None:
    a, b = pair
    client = Client()
    client.force_login(reader)

    assert changes(compared(client, a, b, show="regressions")) == [(2, "regression")]
    assert changes(compared(client, a, b, show="improvements")) == [(1, "improvement")]
    assert [c for _, c in changes(compared(client, a, b, show="changed"))] == [
        "regression",
        "improvement",
    ]
    by_exact = compared(client, a, b, scorer="exact", show="regressions")
    assert changes(by_exact) == [(2, "regression")]
    unknown = compared(client, a, b, show="nonsense", scorer="nonsense")
    assert (unknown.context["show"], unknown.context["scorer"]) == ("all", "")
    # B against A: what regressed is now an improvement.
    assert changes(compared(client, b, a))[:2] == [(1, "regression"), (2, "improvement")]


def test_the_list_and_an_experiments_page_lead_to_the_comparison(
    pair: tuple[Experiment, Experiment], reader: Any, calc: Agent
) -> None:
    a, b = pair
    client = Client()
    client.force_login(reader)

    listed = client.get(reverse("admin:agents_agent_experiments", args=[calc.pk]))
    page = client.get(reverse("admin:agents_agent_experiment", args=[calc.pk, b.pk]))

    assert 'id="experiments-compare-form"' in listed.content.decode()
    assert [e.pk for e in page.context["others"]] == [a.pk]
    assert f'name="b" value="{b.pk}"' in page.content.decode()
    pickers = client.get(compare_url(calc), {"a": str(a.pk)})
    assert pickers.status_code == 200
    assert "Pick two experiments" in pickers.content.decode()
    assert {c["id"] for c in pickers.context["choices"]} == {str(a.pk), str(b.pk)}


def test_experiments_on_two_datasets_are_not_compared(
    scripted_openai: FakeOpenAI, reader: Any, calc: Agent, env: Any
) -> None:
    a = ran(scripted_openai, reader, calc, arithmetic(reader, env, name="one"), ["4", "132"])
    b = ran(scripted_openai, reader, calc, arithmetic(reader, env, name="two"), ["4", "132"])
    client = Client()
    client.force_login(reader)

    response = compared(client, a, b)

    assert response.status_code == 200
    assert "experiments compare on one dataset" in response.content.decode()
    assert "rows" not in response.context


def test_a_page_costs_the_same_queries_for_more_cases_and_shows_100_rows(
    scripted_openai: FakeOpenAI,
    reader: Any,
    calc: Agent,
    env: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = Client()
    client.force_login(reader)
    small = arithmetic(reader, env, cases=2, name="small")
    large = arithmetic(reader, env, cases=3, name="large")
    a2 = ran(scripted_openai, reader, calc, small, ["4", "132"])
    b2 = ran(scripted_openai, reader, calc, small, ["4", "131"])
    a3 = ran(scripted_openai, reader, calc, large, ["4", "132", "4"])
    b3 = ran(scripted_openai, reader, calc, large, ["5", "131", "4"])
    compared(client, a2, b2)  # the session and the user's permissions, read once
    assert a3.agent == a2.agent  # (the URL's agent, read here rather than while counting)

    with CaptureQueriesContext(connection) as small_page:
        compared(client, a2, b2)
    with CaptureQueriesContext(connection) as large_page:
        compared(client, a3, b3)

    small_sql = [q["sql"][:90] for q in small_page.captured_queries]
    large_sql = [q["sql"][:90] for q in large_page.captured_queries]
    assert large_sql == small_sql, "\n".join(large_sql)
    monkeypatch.setattr(admin_compare, "ROWS_PER_PAGE", 2)
    first = compared(client, a3, b3)
    second = compared(client, a3, b3, page="2")
    assert changes(first) == [(1, "regression"), (2, "regression")]
    assert changes(second) == [(3, "same")]
    assert 'class="next-page"' in first.content.decode()


def test_a_row_escapes_what_the_runs_answered() -> None:
    hostile = '<script>alert("x")</script>'
    side = Side(
        answer=hostile,
        tool_calls=[{"name": hostile, "arguments": {"q": hostile}}],
        scores={"exact": {"score": 0.0, "passed": False, "reason": f'" onmouseover="{hostile}'}},
        passed=False,
        pass_rate=0.5,
        run_id=None,
        latency_ms=12,
        error={"message": hostile},
    )
    row = Row(
        case_id="c", position=1, input=hostile, expected=hostile, a=side, b=None, change="only_a"
    )

    html = str(admin_compare.row_html(row, "only_a", ["exact"], "/runs/x/"))

    assert "<script>" not in html
    assert '" onmouseover=' not in html
    assert html.count("&lt;script&gt;") >= 5  # input, expected, answer, tool call, error
    assert "50.0% of runs" in html
    assert "not run" in html  # B has no result for the case
