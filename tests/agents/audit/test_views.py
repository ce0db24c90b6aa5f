"""The audit log through the API (agents/audit/views.py): each recorded change made through
the API, its field-level changes, surface and address; the filters, their 400s at their
path, and who may read it (AUDIT on the environment)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import Agent, AuditRecord, DatasetCase, Environment
from tests.conftest import client_for
from tests.factories import CONFIGS, UserFactory
from tests.support.aliases import put

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

HOOK = "http://127.0.0.1:9/hook"


def records(client: APIClient, **filters: Any) -> list[dict[str, Any]]:
    answer = client.get("/v1/audit", filters)
    assert answer.status_code == 200, answer.json()
    return list(answer.json()["records"])


def test_each_change_through_the_api_is_recorded_with_its_fields(
    owner_client: APIClient, owner: Any
) -> None:
    made = owner_client.post(
        "/v1/agents",
        {"name": "calc", "agentType": "tool", "config": CONFIGS["tool"]},
        format="json",
    )
    assert made.status_code == 201, made.json()
    agent_id = made.json()["id"]
    assert (
        owner_client.patch(
            f"/v1/agents/{agent_id}", {"description": "adds"}, format="json"
        ).status_code
        == 200
    )
    assert (
        owner_client.post(
            f"/v1/agents/{agent_id}/versions", {"notes": "again"}, format="json"
        ).status_code
        == 201
    )
    agent = Agent.objects.get(pk=agent_id)
    assert put(owner_client, agent, "prod", 2).status_code in (200, 201)
    assert owner_client.delete(f"/v1/agents/{agent_id}/aliases/prod").status_code == 204
    budget = owner_client.post(
        "/v1/budgets",
        {"scope": {"agent": agent_id}, "period": "day", "action": "warn", "limitTokens": 10},
        format="json",
    ).json()
    assert (
        owner_client.patch(
            f"/v1/budgets/{budget['id']}", {"limitTokens": 20}, format="json"
        ).status_code
        == 200
    )
    assert owner_client.delete(f"/v1/budgets/{budget['id']}").status_code == 204
    base = f"/v1/agents/{agent_id}/webhooks"
    hook = owner_client.post(base, {"url": HOOK}, format="json").json()
    assert (
        owner_client.patch(f"{base}/{hook['id']}", {"enabled": False}, format="json").status_code
        == 200
    )
    assert owner_client.delete(f"{base}/{hook['id']}").status_code == 204
    assert owner_client.delete(f"/v1/agents/{agent_id}").status_code == 200

    log = list(reversed(records(owner_client, limit=100)))
    assert [(r["action"], r["object"]["type"]) for r in log] == [
        ("create", "agent"),
        ("create", "version"),
        ("update", "agent"),
        ("create", "version"),
        ("alias.set", "alias"),
        ("alias.delete", "alias"),
        ("create", "budget"),
        ("update", "budget"),
        ("delete", "budget"),
        ("create", "agentwebhook"),
        ("update", "agentwebhook"),
        ("delete", "agentwebhook"),
        ("delete", "agent"),
    ]
    assert all(r["surface"] == "api" and r["ip"] == "127.0.0.1" for r in log)
    assert all(r["actor"] == {"id": owner.pk, "name": "owner"} for r in log)
    assert log[0]["changes"]["name"] == {"from": None, "to": "calc"}
    assert log[2]["changes"] == {"description": {"from": "", "to": "adds"}}
    assert log[3]["changes"]["number"] == {"from": None, "to": 2}
    assert log[4]["changes"] == {"version": {"from": None, "to": 2}}
    assert log[5]["changes"] == {"version": {"from": 2, "to": None}}
    assert log[7]["changes"] == {"limit_tokens": {"from": 10, "to": 20}}
    assert log[10]["changes"] == {"enabled": {"from": True, "to": False}}
    assert log[12]["object"] == {"type": "agent", "id": agent_id, "repr": "calc"}


def test_a_webhook_urls_credentials_never_reach_a_record(
    owner_client: APIClient, make_agent: Any
) -> None:
    agent = make_agent()
    base = f"/v1/agents/{agent.pk}/webhooks"
    secret_url = "http://127.0.0.1:9/hook?token=s3cr3t-value"
    hook = owner_client.post(base, {"url": secret_url}, format="json")
    assert hook.status_code == 201, hook.json()
    moved = "http://127.0.0.1:9/hook?token=an0ther-s3cr3t"
    patched = owner_client.patch(f"{base}/{hook.json()['id']}", {"url": moved}, format="json")
    assert patched.status_code == 200
    created, updated = reversed(records(owner_client, objectType="agentwebhook"))
    assert created["changes"]["url"] == {
        "from": None,
        "to": "http://127.0.0.1:9/hook?token=changed",
    }
    assert updated["changes"] == {"url": {"from": "changed", "to": "changed"}}
    stored = str(list(AuditRecord.objects.values()))
    assert "s3cr3t" not in stored


def test_the_filters_narrow_the_records(
    owner_client: APIClient, owner: Any, make_agent: Any, env: Environment
) -> None:
    first = make_agent("first")  # made by the superuser of the fixtures
    owner_client.patch(f"/v1/agents/{first.pk}", {"description": "x"}, format="json")
    assert [r["action"] for r in records(owner_client, actorId=owner.pk)] == ["update"]
    assert len(records(owner_client, objectType="agent", objectId=str(first.pk))) == 2
    assert [r["object"]["type"] for r in records(owner_client, action="create")] == [
        "version",
        "agent",
    ]
    newest = records(owner_client)[0]["at"]
    assert records(owner_client, to=newest) != []
    assert records(owner_client, **{"from": "2999-01-01T00:00:00Z"}) == []
    page = owner_client.get("/v1/audit", {"limit": 1}).json()
    assert page["pagination"] == {"totalItems": 3, "offset": 0, "limit": 1, "hasMore": True}


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"objectType": "secret"}, ["query", "objectType"]),
        ({"actorId": "me"}, ["query", "actorId"]),
        ({"from": "yesterday"}, ["query", "from"]),
        ({"from": "2026-01-01T00:00:00"}, ["query", "from"]),
        ({"to": "0.5"}, ["query", "to"]),  # a number is no date-time, not 1970's
        ({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, ["query", "to"]),
    ],
)
def test_a_bad_filter_is_400_at_its_path(
    owner_client: APIClient, params: dict[str, str], loc: list[str]
) -> None:
    answer = owner_client.get("/v1/audit", params)
    assert answer.status_code == 400
    assert [e["loc"] for e in answer.json()["detail"]] == [loc]


def test_only_audit_holders_read_the_log(
    env: Environment, other_env: Environment, make_agent: Any, stranger: Any
) -> None:
    make_agent()
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, env)
    assert client_for(reader, env).get("/v1/audit").status_code == 403
    assert client_for(stranger, env).get("/v1/audit").status_code == 403
    assert client_for(auditor, other_env).get("/v1/audit").status_code == 403
    assert len(records(client_for(auditor, env))) == 2
    make_agent("elsewhere", environment=other_env)
    assert len(records(client_for(auditor, env))) == 2  # not the other environment's


def test_gates_datasets_and_mcp_servers_changed_through_the_api_are_recorded(
    owner_client: APIClient, owner: Any, make_agent: Any, settings: Any
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    agent = make_agent("calc")
    before = AuditRecord.objects.count()  # the agent, made by the fixtures' superuser
    made = owner_client.post("/v1/datasets", {"name": "arith", "agentType": "tool"}, format="json")
    assert made.status_code == 201, made.json()
    dataset = f"/v1/datasets/{made.json()['id']}"
    assert owner_client.patch(dataset, {"description": "sums"}, format="json").status_code == 200
    cases = [{"input": f"{n} + {n}", "expected": {"output": str(2 * n)}} for n in range(3)]
    assert owner_client.post(f"{dataset}/cases", cases, format="json").status_code == 201
    first = DatasetCase.objects.order_by("position").first()
    assert first is not None
    removed = owner_client.post(
        f"{dataset}/cases/remove", {"caseIds": [str(first.pk)]}, format="json"
    )
    assert removed.status_code == 200, removed.json()
    gate = f"/v1/agents/{agent.pk}/aliases/prod/gate"
    rule = {"datasetId": made.json()["id"], "scorers": ["exact"], "thresholds": {"exact": 1.0}}
    assert owner_client.put(gate, rule, format="json").status_code == 200
    lower = {**rule, "thresholds": {"exact": 0.5}}
    assert owner_client.put(gate, lower, format="json").status_code == 200
    forced = {"version": 1, "force": True, "reason": "hotfix"}
    moved = owner_client.put(f"/v1/agents/{agent.pk}/aliases/prod", forced, format="json")
    assert moved.status_code in (200, 201), moved.json()
    assert owner_client.delete(gate).status_code == 204
    assert owner_client.delete(dataset).status_code == 204
    server = owner_client.post(
        "/v1/mcp-servers",
        {"name": "tools", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Team": "a"}},
        format="json",
    ).json()
    patched = owner_client.patch(
        f"/v1/mcp-servers/{server['id']}",
        {"timeout": 10, "headers": {"X-Team": "b"}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    assert owner_client.delete(f"/v1/mcp-servers/{server['id']}").status_code == 200

    log = list(reversed(records(owner_client, limit=100)))[before:]
    assert [(r["action"], r["object"]["type"]) for r in log] == [
        ("create", "dataset"),
        ("update", "dataset"),
        ("cases.add", "dataset"),
        ("cases.remove", "dataset"),
        ("gate.set", "gate"),
        ("gate.set", "gate"),
        ("alias.set", "alias"),
        ("gate.delete", "gate"),
        ("delete", "dataset"),
        ("create", "mcpserver"),
        ("update", "mcpserver"),
        ("delete", "mcpserver"),
    ]
    assert all(r["surface"] == "api" and r["ip"] == "127.0.0.1" for r in log)
    assert all(r["actor"] == {"id": owner.pk, "name": "owner"} for r in log)
    assert log[0]["changes"]["name"] == {"from": None, "to": "arith"}
    assert log[1]["changes"] == {"description": {"from": "", "to": "sums"}}
    assert log[2]["changes"] == {
        "revision": {"from": 0, "to": 1},
        "casesAdded": {"from": None, "to": 3},
    }
    assert log[3]["changes"] == {
        "revision": {"from": 1, "to": 2},
        "casesRemoved": {"from": None, "to": 1},
    }
    assert log[4]["object"]["repr"] == "calc@prod"
    assert log[4]["changes"]["thresholds"] == {"from": None, "to": {"exact": 1.0}}
    assert log[5]["changes"] == {"thresholds": {"from": {"exact": 1.0}, "to": {"exact": 0.5}}}
    assert log[6]["changes"]["forced_reason"] == {"from": None, "to": "hotfix"}
    assert log[7]["changes"]["dataset"] == {"from": made.json()["id"], "to": None}
    assert log[9]["changes"]["header_names"] == {"from": None, "to": ["X-Team"]}
    assert log[9]["changes"]["headers"] == {"from": None, "to": "changed"}
    assert log[10]["changes"] == {
        "timeout": {"from": 30.0, "to": 10.0},
        "headers": {"from": "changed", "to": "changed"},
    }
    assert [r["object"]["type"] for r in records(owner_client, objectType="gate")] == ["gate"] * 3
