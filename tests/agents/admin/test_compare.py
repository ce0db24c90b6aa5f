"""Two versions side by side (agents/admin/compare.py)."""

from __future__ import annotations

import html
from typing import Any

from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG, UserFactory


def compare(client: Client, agent: Any, **query: str) -> Any:
    return client.get(reverse("admin:agents_agent_compare", args=[agent.pk]), query)


def text_of(page: Any) -> str:
    # difflib keeps the lines' spaces as &nbsp;
    return html.unescape(page.content.decode()).replace("\xa0", " ")


def test_any_two_versions_are_compared_side_by_side(
    client: Client, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc")
    version_add(
        user=admin_user,
        agent=agent,
        config={**CALCULATOR_CONFIG, "systemPrompt": "Be terse."},
        version_label="terse",
    )
    version_add(user=admin_user, agent=agent, config=None, notes="same config again")
    client.force_login(admin_user)

    page = compare(client, agent, a="1", b="3")
    text = text_of(page)

    assert page.status_code == 200
    assert 'id="config-diff"' in text
    assert "You are a helpful assistant" in text
    assert "Be terse." in text
    assert "same config again" in text  # the notes are compared too
    same = text_of(compare(client, agent, a="2", b="3"))
    assert "The two configs are the same." in same


def test_by_default_the_latest_is_compared_with_the_one_before(
    client: Client, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc")
    version_add(
        user=admin_user, agent=agent, config={**CALCULATOR_CONFIG, "systemPrompt": "Be brief."}
    )
    client.force_login(admin_user)

    page = compare(client, agent)

    assert (page.context["a"].number, page.context["b"].number) == (1, 2)
    assert "Be brief." in text_of(page)


def test_a_missing_version_is_said_in_the_page(
    client: Client, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc")
    client.force_login(admin_user)

    page = compare(client, agent, a="9", b="latest")

    assert page.status_code == 200
    assert "Version &#x27;9&#x27;" in page.content.decode() or "Version '9'" in html.unescape(
        page.content.decode()
    )
    assert page.context["a"] is None


def test_the_version_history_links_each_version_to_the_one_before(
    client: Client, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc")
    version_add(user=admin_user, agent=agent, config=None, notes="again")
    client.force_login(admin_user)

    page = client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    url = reverse("admin:agents_agent_compare", args=[agent.pk])
    assert f"{url}?a=1&amp;b=2" in page
    assert f'href="{url}" class="compare-link"' in page


def test_only_readers_compare(client: Client, env: Any, make_agent: Any) -> None:
    agent = make_agent("calc")
    invoker = UserFactory(username="invoker", is_staff=True)
    grant(invoker, Action.INVOKE, env)
    client.force_login(invoker)

    assert compare(client, agent).status_code == 404
