"""The admin's usage page (agents/admin/usage.py) and the cost of each run in the runs list
and on a run's page, over runs of known tokens and costs (tests/support/usage.py). The
page's charts in Chromium: test_usage_browser.py."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Environment
from tests.support.usage import Spend, spend

USAGE = "/admin/agents/runusage/"
NOVEMBER = {"start": "2026-11-10", "end": "2026-11-11"}


@pytest.fixture
def world(make_agent: Any, admin_user: Any, env: Environment, other_env: Environment) -> Spend:
    world = spend(make_agent, admin_user, env, other_env)
    for user in (world.alice, world.bob, world.auditor):
        user.is_staff = True
        user.save()
    return world


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_text(client: Client, **query: Any) -> str:
    got = client.get(USAGE, query)
    assert got.status_code == 200
    return html.unescape(got.content.decode())


def table(text: str, name: str) -> list[list[str]]:
    """The cells of the usage table `name`, row by row, tags stripped."""
    body = re.search(rf'<table id="usage-{name}".*?<tbody>(.*?)</tbody>', text, re.S)
    assert body is not None, name
    return [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    ]


def test_the_app_list_links_to_the_usage_page(world: Spend) -> None:
    index = signed_in(world.alice).get(reverse("admin:index")).content.decode()

    assert f'href="{USAGE}"' in index
    assert reverse("admin:agents_runusage_changelist") == USAGE


def test_a_staff_user_sees_its_own_runs_added_up(world: Spend, env: Environment) -> None:
    text = page_text(signed_in(world.alice), **NOVEMBER, environment=env.pk)

    assert re.search(r'id="usage-runs">3<', text)
    assert re.search(r'id="usage-tokens">230<', text)
    assert re.search(r'id="usage-cost">\$0.015<', text)
    assert "(and 1 run of models without a price)" in text
    assert table(text, "agent") == [
        ["alpha", "2", "110", "60", "0", "170", "$0.015", "0"],
        ["beta", "1", "30", "30", "0", "60", "-", "1"],
    ]
    assert [row[0] for row in table(text, "caller")] == ["alice"]
    assert [row[0] for row in table(text, "model")] == ["m1", "m2", "m3"]
    assert [row[:2] for row in table(text, "day")] == [["2026-11-10", "1"], ["2026-11-11", "2"]]
    for chart in ("cost", "tokens", "top-agent", "top-version", "top-caller", "top-model"):
        assert f'class="chart-{chart}"' in text


def test_all_environments_unless_one_is_chosen(world: Spend) -> None:
    text = page_text(signed_in(world.alice), **NOVEMBER)

    assert [row[0] for row in table(text, "agent")] == ["gamma", "alpha", "beta"]


def test_an_auditor_sees_every_callers_runs_of_its_agents(world: Spend) -> None:
    text = page_text(signed_in(world.auditor), **NOVEMBER)

    assert [row[:2] + row[6:7] for row in table(text, "caller")] == [
        ["bob", "1", "$0.02"],
        ["alice", "2", "$0.015"],
    ]
    assert [row[0] for row in table(text, "agent")] == ["alpha"]


def test_a_period_that_is_no_period_shows_its_error_at_its_field(world: Spend) -> None:
    text = page_text(signed_in(world.alice), start="2026-11-12", end="2026-11-11")

    assert "must be after &#x27;from&#x27;" in text or "must be after 'from'" in text
    assert 'id="usage-charts"' not in text


def test_an_environment_the_user_sees_nothing_of_is_not_a_choice(
    world: Spend, stranger: Any, env: Environment
) -> None:
    stranger.is_staff = True
    stranger.save()
    text = page_text(signed_in(stranger), environment=env.pk)

    assert "Select a valid choice" in text


def test_the_runs_list_and_a_runs_page_show_its_cost(world: Spend) -> None:
    client = signed_in(world.alice)
    listing = html.unescape(client.get("/admin/agents/run/").content.decode())

    costs = re.findall(r'<td class="field-cost">([^<]*)</td>', listing)
    assert sorted(costs) == ["$0.005", "$0.01", "$1", "$5", "-"]  # beta's: no price
    run = world.runs[0]
    page = html.unescape(client.get(f"/admin/agents/run/{run.pk}/change/").content.decode())
    assert '<td id="run-cost">$0.01</td>' in page


def test_the_usage_entry_shows_no_run_of_its_own(world: Spend) -> None:
    client = signed_in(world.alice)
    bobs = world.runs[1]

    assert client.get(f"{USAGE}{bobs.pk}/change/").status_code == 404
    assert client.get(f"/admin/agents/run/{bobs.pk}/change/").status_code == 302  # not hers


def test_a_superuser_sees_the_big_tables_sizes_and_the_retention(
    world: Spend, admin_user: Any, settings: Any
) -> None:
    settings.RUN_RETENTION_DAYS = 90

    page = signed_in(admin_user).get(USAGE)

    sizes = {t.table: t.bytes for t in page.context["storage"]}
    assert set(sizes) == {
        "agents_run",
        "agents_runevent",
        "agents_webhookdelivery",
        "retrieval_document",
        "retrieval_chunk",
    }
    # The runs table holds the world's runs: pages on disk, with its indexes.
    assert sizes["agents_run"] >= 8192
    text = html.unescape(page.content.decode())
    assert 'id="usage-storage"' in text
    assert "run events" in text
    assert "more than 90 days ago are pruned daily" in text


def test_a_staff_user_who_is_not_a_superuser_sees_no_table_sizes(world: Spend) -> None:
    page = signed_in(world.alice).get(USAGE)

    assert "storage" not in page.context
    assert 'id="usage-storage"' not in page.content.decode()
