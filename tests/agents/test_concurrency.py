"""Races on real PostgreSQL: parallel version adds and same-name creates, each request
on its own thread and its own database connection."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from agents.models import Agent, AgentVersion, AliasChange, VersionAlias
from tests.conftest import client_for
from tests.factories import CALCULATOR_CONFIG

# Transactional: the threads only see committed rows. serialized_rollback restores the
# catalogs and the `default` environment that migrations seed and the flush would erase.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

VERSIONS_ADDED = 8
CREATE_ROUNDS = 5
ALIAS_PUTS = 8


def run_together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call on its own thread, released at once; return results (or exceptions)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=60)  # generous: threads start late on a busy machine
            results[index] = calls[index]()
        except Exception as exc:  # reported by the test, not lost in the thread
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)  # a hung request, not a slow machine, must fail this
    assert not any(t.is_alive() for t in threads), "a request hung"
    return results


def create_call(client: Any, name: str) -> Callable[[], Any]:
    body = {"name": name, "agentType": "tool", "config": CALCULATOR_CONFIG}
    return lambda: client.post("/v1/agents", body, format="json")


def assert_one_wins(responses: list[Any], names: tuple[str, str]) -> None:
    assert not [r for r in responses if isinstance(r, Exception)], responses
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 409], [r.json() for r in responses]
    conflict = next(r for r in responses if r.status_code == 409)
    assert conflict.json()["detail"] in {
        f"Agent '{name}' already exists in environment 'default'" for name in names
    }


def test_parallel_version_adds_are_numbered_without_gaps(owner: Any) -> None:
    client = client_for(owner)
    agent_id = client.post(
        "/v1/agents", {"name": "calc", "agentType": "tool", "config": CALCULATOR_CONFIG}, "json"
    ).json()["id"]
    clients = [client_for(owner) for _ in range(VERSIONS_ADDED)]

    responses = run_together(
        [
            lambda c=c, i=i: c.post(
                f"/v1/agents/{agent_id}/versions", {"notes": f"thread {i}"}, format="json"
            )
            for i, c in enumerate(clients)
        ]
    )

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses] == [201] * VERSIONS_ADDED, [
        r.json() for r in responses
    ]
    answered = sorted(r.json()["version"]["number"] for r in responses)
    assert answered == list(range(2, VERSIONS_ADDED + 2))
    stored = sorted(AgentVersion.objects.filter(agent_id=agent_id).values_list("number", flat=True))
    assert stored == list(range(1, VERSIONS_ADDED + 2))


def test_parallel_creates_of_one_name_in_two_cases_give_one_201_and_one_409(owner: Any) -> None:
    clients = (client_for(owner), client_for(owner))
    for round_ in range(CREATE_ROUNDS):
        names = (f"Calc{round_}", f"calc{round_}")

        responses = run_together([create_call(c, n) for c, n in zip(clients, names, strict=True)])

        assert_one_wins(responses, names)
        assert Agent.objects.filter(name__iexact=names[0]).count() == 1


def test_soft_deleted_name_can_be_created_again_even_by_parallel_requests(owner: Any) -> None:
    client = client_for(owner)
    first = client.post(
        "/v1/agents", {"name": "calc", "agentType": "tool", "config": CALCULATOR_CONFIG}, "json"
    ).json()["id"]
    assert client.delete(f"/v1/agents/{first}").status_code == 200

    names = ("Calc", "calc")
    responses = run_together([create_call(client_for(owner), n) for n in names])

    assert_one_wins(responses, names)
    winner = next(r for r in responses if r.status_code == 201).json()
    assert winner["id"] != first
    assert client.get(f"/v1/agents/{winner['id']}").status_code == 200
    assert Agent.objects.filter(name__iexact="calc", deleted_at__isnull=True).count() == 1
    assert Agent.objects.filter(name__iexact="calc").count() == 2


def test_parallel_puts_of_one_alias_all_succeed_and_the_history_is_one_chain(owner: Any) -> None:
    client = client_for(owner)
    agent_id = client.post(
        "/v1/agents", {"name": "calc", "agentType": "tool", "config": CALCULATOR_CONFIG}, "json"
    ).json()["id"]
    for _ in range(2):
        client.post(f"/v1/agents/{agent_id}/versions", {}, format="json")
    # Alternating targets: each PUT after the first moves the alias, whichever order they run.
    targets = [1 + i % 3 for i in range(ALIAS_PUTS)]
    clients = [client_for(owner) for _ in targets]

    responses = run_together(
        [
            lambda c=c, n=n: c.put(
                f"/v1/agents/{agent_id}/aliases/prod", {"version": n}, format="json"
            )
            for c, n in zip(clients, targets, strict=True)
        ]
    )

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses] == [200] * ALIAS_PUTS, [r.json() for r in responses]
    alias = VersionAlias.objects.get(agent_id=agent_id)
    changes = list(
        AliasChange.objects.filter(agent_id=agent_id)
        .order_by("changed_at", "id")
        .values_list("from_version__number", "to_version__number")
    )
    # Each change starts where the one before it left the alias, and the last one is where it
    # points now: no PUT read a version another had already replaced.
    assert changes[0][0] is None
    assert all(prev[1] == nxt[0] for prev, nxt in itertools.pairwise(changes))
    assert changes[-1][1] == alias.version.number
