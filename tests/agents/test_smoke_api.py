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
    # The config as it was written: no default added (runs read them: AgentVersion.config).
    assert latest["version"]["config"] == CALCULATOR_CONFIG

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


def test_a_stored_config_keeps_the_order_of_its_keys(owner_client):
    from agents.examples import PERSON_EXTRACTOR

    created = owner_client.post("/v1/agents", PERSON_EXTRACTOR, format="json").json()
    version = owner_client.get(f"/v1/agents/{created['id']}/versions/1").json()["version"]
    schema = version["config"]["tools"][0]["outputSchema"]
    # jsonb would answer age, name, occupation; the model must see the schema as written.
    assert list(schema["properties"]) == ["name", "age", "occupation"]
    answer = owner_client.post(
        f"/v1/agents/{created['id']}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "John Doe is a 35-year-old software engineer"}]},
        format="json",
    )
    assert answer.content == b'{"name":"John Doe","age":35,"occupation":"software engineer"}'


def test_a_config_comes_back_as_written_without_defaults_or_reordering(owner_client):
    from agents.models import AgentVersion

    written = {
        "systemPrompt": "You compute.\nShow the steps.",
        "tools": CALCULATOR_CONFIG["tools"],
        "llmModelId": CALCULATOR_CONFIG["llmModelId"],
        "maxIterations": 10,  # a default the author chose to write: it stays
    }
    created = owner_client.post(
        "/v1/agents", {"name": "calc", "agentType": "tool", "config": written}, format="json"
    ).json()
    url = f"/v1/agents/{created['id']}/versions"
    owner_client.post(url, {"notes": "a copy"}, format="json")

    for number in (1, 2):
        echoed = owner_client.get(f"{url}/{number}").json()["version"]["config"]
        assert echoed == written
        assert list(echoed) == list(written)
    stored = AgentVersion.objects.get(agent_id=created["id"], number=2)
    assert stored.config["inferenceConfig"]["maxTokens"] == 4000  # what runs read
