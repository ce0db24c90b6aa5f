"""What the OpenAPI document refuses the server refuses, and what it allows the server
takes (schemathesis' negative_data_rejection and positive_data_acceptance, by hand for the
cases a full run found): booleans are JSON booleans, ids in paths are uuids as the document
writes them, and an empty list filter is documented as the no filter it is."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.models import Agent, McpServer

ASK = [{"role": "user", "content": "What is 3 times 5?"}]


def located(response: Any) -> list[Any]:
    assert response.status_code == 400, response.content
    return [error["loc"] for error in response.json()["detail"]]


@pytest.mark.parametrize("value", [0, 1, "true", "yes"])
def test_a_boolean_that_is_not_one_is_refused_at_its_path(
    owner_client: APIClient, make_agent: Any, value: Any, settings: Any
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    agent: Agent = make_agent()
    invoke = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    server = {"name": "tools", "url": "http://127.0.0.1:9/mcp", "enabled": value}

    assert located(owner_client.post("/v1/mcp-servers", server, "json")) == [["body", "enabled"]]
    assert located(owner_client.post(invoke, {"messages": ASK, "hybridSearch": value}, "json")) == [
        ["body", "hybridSearch"]
    ]
    openai = owner_client.post(
        "/v1/openai/chat/completions",
        {"model": agent.name, "messages": ASK, "parallel_tool_calls": value},
        "json",
    )
    assert openai.status_code == 400
    assert openai.json()["error"]["param"] == "parallel_tool_calls"
    assert not McpServer.objects.exists()


@pytest.mark.parametrize(
    "spelling",
    [
        lambda u: u.hex,  # 32 digits, no hyphens
        lambda u: "{" + str(u) + "}",
        lambda u: u.urn,
    ],
    ids=["hex", "braces", "urn"],
)
def test_an_id_in_a_path_is_a_uuid_as_the_document_writes_it(
    owner_client: APIClient, make_agent: Any, spelling: Any
) -> None:
    agent: Agent = make_agent()
    assert owner_client.get(f"/v1/agents/{agent.pk}").status_code == 200
    assert owner_client.get(f"/v1/agents/{str(agent.pk).upper()}").status_code == 200

    refused = owner_client.get(f"/v1/agents/{spelling(agent.pk)}")

    assert located(refused) == [["path", "agentId"]]
    assert located(owner_client.get(f"/v1/runs/{spelling(uuid.uuid4())}")) == [["path", "runId"]]


def test_an_empty_list_filter_is_no_filter_as_documented(owner_client: APIClient) -> None:
    listed = owner_client.get("/v1/runs", {"limit": "", "agentId": "", "status": ""})

    assert listed.status_code == 200
    assert listed.json()["pagination"]["limit"] == 50
