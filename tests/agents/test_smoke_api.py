from __future__ import annotations

from tests.factories import CALCULATOR_CONFIG


def test_owner_creates_versions_looks_up_and_deletes_an_agent(owner_client):
    created = owner_client.post(
        "/v1/agents",
        {"name": "calc", "agentType": "tool", "description": "Math", "config": CALCULATOR_CONFIG},
        format="json",
    )
    assert created.status_code == 201, created.json()
    agent = created.json()
    assert agent["name"] == "calc"
    assert agent["currentVersionId"]

    added = owner_client.post(
        f"/v1/agents/{agent['id']}/versions", {"notes": "copy"}, format="json"
    )
    assert added.status_code == 201, added.json()
    assert added.json()["version"]["number"] == 2

    latest = owner_client.get(f"/v1/agents/{agent['id']}/versions/latest").json()
    assert latest["version"]["number"] == 2
    assert latest["version"]["config"]["inferenceConfig"]["maxTokens"] == 4000

    looked = owner_client.post("/v1/agents/lookup", {"name": "CALC"}, format="json")
    assert looked.json()["agent"]["id"] == agent["id"]

    assert owner_client.delete(f"/v1/agents/{agent['id']}").json() == {"agentId": agent["id"]}
    assert owner_client.get(f"/v1/agents/{agent['id']}").status_code == 404
    again = owner_client.post(
        "/v1/agents",
        {"name": "Calc", "agentType": "tool", "config": CALCULATOR_CONFIG},
        format="json",
    )
    assert again.status_code == 201
