"""OAuth access tokens on the API (agents.access.oauth.tokens, read by
agents.access.authentication): good only on the resource they are bound to, within their
scopes, as their holder; refused otherwise with RFC 6750's challenge, which on A2A names
the resource's metadata (RFC 9728)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents.examples import CALCULATOR
from agents.models import Agent
from tests.support.oauth import issue

BASE = "http://testserver"
A2A = "/v1/a2a/Calculator"
A2A_METADATA = f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/v1/a2a"'
TASKS_GET = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def rpc(client: Client) -> Any:
    return client.post(A2A, TASKS_GET, content_type="application/json")


def test_a_token_for_the_api_acts_as_its_holder(
    owner: Any, stranger: Any, calculator: Agent
) -> None:
    as_owner = bearer(issue(owner, resources=[f"{BASE}/v1"]))
    as_stranger = bearer(issue(stranger, resources=[f"{BASE}/v1"]))

    assert [a["name"] for a in as_owner.get("/v1/agents").json()["agents"]] == ["Calculator"]
    assert as_stranger.get("/v1/agents").json()["agents"] == []
    assert as_stranger.get(f"/v1/agents/{calculator.pk}").status_code == 404


def test_a_token_for_mcp_is_refused_by_the_rest_api_and_a2a(owner: Any, calculator: Agent) -> None:
    client = bearer(issue(owner, resources=[f"{BASE}/v1/mcp"]))

    rest = client.get("/v1/agents")
    a2a = rpc(client)

    assert rest.status_code == 401
    assert 'error="invalid_token"' in rest["WWW-Authenticate"]
    assert "not for this resource" in rest.json()["detail"]
    assert a2a.status_code == 401
    assert 'error="invalid_token"' in a2a["WWW-Authenticate"]
    assert A2A_METADATA in a2a["WWW-Authenticate"]


def test_a_token_for_a2a_calls_a2a_only(owner: Any, calculator: Agent) -> None:
    client = bearer(issue(owner, resources=[f"{BASE}/v1/a2a"]))

    answer = rpc(client)

    assert answer.status_code == 200
    assert answer.json()["error"]["code"] == -32001  # the task is unknown: it was let in
    assert client.get(f"{A2A}/.well-known/agent-card.json").status_code == 200
    assert client.get("/v1/agents").status_code == 401


def test_a_token_for_one_a2a_agent_is_refused_by_another(owner: Any, make_agent: Any) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    client = bearer(issue(owner, resources=[f"{BASE}/v1/a2a/Other"]))

    assert rpc(client).status_code == 401


def test_a2a_without_a_token_names_its_resource_metadata(calculator: Agent) -> None:
    answer = rpc(Client())

    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == f'Bearer realm="api", {A2A_METADATA}'


def test_a_read_only_token_reads_but_may_not_invoke(owner: Any, calculator: Agent) -> None:
    client = bearer(issue(owner, resources=[f"{BASE}/v1"], scope="agents:read"))

    invoke = rpc(client)

    assert client.get("/v1/agents").status_code == 200
    assert invoke.status_code == 403
    challenge = invoke["WWW-Authenticate"]
    assert 'error="insufficient_scope", scope="agents:invoke"' in challenge
    assert A2A_METADATA in challenge


@pytest.mark.parametrize("case", ["expired", "unknown", "holder disabled"])
def test_a_dead_token_is_invalid_token(owner: Any, case: str) -> None:
    token = issue(owner, resources=[f"{BASE}/v1"], seconds=-1 if case == "expired" else 3600)
    if case == "unknown":
        token += "x"
    if case == "holder disabled":
        get_user_model().objects.filter(pk=owner.pk).update(is_active=False)

    response = bearer(token).get("/v1/agents")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api", error="invalid_token"'
