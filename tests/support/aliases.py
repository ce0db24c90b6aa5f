"""The aliases API of an agent with three versions: put an alias, read its history."""

from typing import Any
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from agents.models import Agent
from agents.services.versions import version_add


@pytest.fixture
def calc(make_agent: Any, admin_user: Any) -> Agent:
    """A tool agent with versions 1 and 2: an alias on 1 is never mistaken for `latest`."""
    agent = make_agent("calc")
    version_add(user=admin_user, agent=agent, config=None, notes="second")
    return agent


def url(agent: Agent, name: str = "") -> str:
    return f"/v1/agents/{agent.pk}/aliases" + (f"/{quote(name)}" if name else "")


def put(client: APIClient, agent: Agent, name: str, version: Any) -> Any:
    return client.put(url(agent, name), {"version": version}, format="json")


def history(client: APIClient, agent: Agent, **query: Any) -> list[tuple[Any, ...]]:
    got = client.get(url(agent, "history"), query)
    assert got.status_code == 200, got.json()
    return [
        (c["name"], c["fromVersion"], c["toVersion"], c["changedBy"]) for c in got.json()["changes"]
    ]
