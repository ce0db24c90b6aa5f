"""The list endpoints read a page in a fixed number of queries, however many rows it holds:
the count for five rows is the count for one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import Agent, Environment, McpServer, Run
from agents.schedules.services import ScheduleSpec, schedule_create
from agents.services.aliases import alias_set
from agents.services.versions import version_add
from retrieval.models import Document
from tests.factories import EnvironmentFactory

MORE = 4


def queries_for(client: APIClient, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def assert_constant(
    client: APIClient, url: str, key: str, add: Callable[[int], Any], bound: Any
) -> None:
    add(0)
    client.get(url)  # caches (content types, permissions) filled once, not per row
    one = queries_for(client, url)
    for i in range(1, 1 + MORE):
        add(i)
    with bound(one):
        page = client.get(url).json()
    assert len(page[key]) >= 1 + MORE


def test_agent_list_reads_a_page_in_constant_queries(
    owner_client: APIClient,
    make_agent: Callable[..., Agent],
    django_assert_max_num_queries: Any,
) -> None:
    assert_constant(
        owner_client,
        "/v1/agents",
        "agents",
        lambda i: make_agent(f"agent-{i}"),
        django_assert_max_num_queries,
    )


def test_run_list_reads_a_page_in_constant_queries(
    owner: Any,
    owner_client: APIClient,
    make_agent: Callable[..., Agent],
    django_assert_max_num_queries: Any,
) -> None:
    def add(i: int) -> None:
        agent = make_agent(f"agent-{i}")
        Run.objects.create(
            agent=agent, version=agent.versions.get(), caller=owner, protocol="native"
        )

    assert_constant(owner_client, "/v1/runs", "runs", add, django_assert_max_num_queries)


def test_environment_list_reads_a_page_in_constant_queries(
    owner: Any, owner_client: APIClient, django_assert_max_num_queries: Any
) -> None:
    def add(i: int) -> None:
        grant(owner, Action.READ, EnvironmentFactory(name=f"env-{i}"))

    assert_constant(
        owner_client, "/v1/environments", "environments", add, django_assert_max_num_queries
    )


def test_mcp_server_list_reads_a_page_in_constant_queries(
    env: Environment, owner_client: APIClient, django_assert_max_num_queries: Any
) -> None:
    def add(i: int) -> None:
        McpServer.objects.create(
            environment=env if i % 2 else None,
            name=f"server-{i}",
            url=f"https://mcp{i}.example.com/mcp",
        )

    assert_constant(
        owner_client, "/v1/mcp-servers", "mcpServers", add, django_assert_max_num_queries
    )


@pytest.mark.parametrize("status", ["ready", "failed"])
def test_document_list_reads_a_page_in_constant_queries(
    status: str,
    env: Environment,
    owner_client: APIClient,
    django_assert_max_num_queries: Any,
) -> None:
    def add(i: int) -> None:
        Document.objects.create(
            environment=env,
            title=f"doc-{i}",
            media_type="text/plain",
            source=b"text",
            status=status,
        )

    assert_constant(
        owner_client,
        f"/v1/documents?status={status}",
        "documents",
        add,
        django_assert_max_num_queries,
    )


@pytest.mark.parametrize(("path", "key"), [("aliases", "aliases"), ("aliases/history", "changes")])
def test_aliases_and_their_history_read_in_constant_queries(
    path: str,
    key: str,
    owner: Any,
    make_agent: Callable[..., Agent],
    owner_client: APIClient,
    django_assert_max_num_queries: Any,
) -> None:
    agent = make_agent("calc")
    for _ in range(2):
        version_add(user=owner, agent=agent, config=None)

    def add(i: int) -> None:
        alias_set(user=owner, agent=agent, name=f"alias-{i}", version_number=1 + i % 3)

    assert_constant(
        owner_client, f"/v1/agents/{agent.pk}/{path}", key, add, django_assert_max_num_queries
    )


def test_schedules_read_in_constant_queries(
    owner: Any,
    make_agent: Callable[..., Agent],
    owner_client: APIClient,
    django_assert_max_num_queries: Any,
) -> None:
    agent = make_agent("calc")
    ask = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}

    def add(i: int) -> None:
        spec = ScheduleSpec(cron=f"{i} * * * *", input=ask, enabled=i % 2 == 0)
        schedule = schedule_create(user=owner, agent=agent, spec=spec)
        Run.objects.create(
            agent=agent,
            version=agent.versions.get(),
            caller=owner,
            protocol="schedule",
            schedule=schedule,
        )

    assert_constant(
        owner_client,
        f"/v1/agents/{agent.pk}/schedules",
        "schedules",
        add,
        django_assert_max_num_queries,
    )
