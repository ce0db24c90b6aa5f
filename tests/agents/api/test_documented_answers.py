"""Answers that the OpenAPI document described wrongly, checked against the document as
served: a structured-output agent's invoke (the bare object docs/api.md#invoke asks for) and
the `process` stream's events (each `data` one protocol object)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from agents.examples import CALCULATOR, PERSON_EXTRACTOR
from agents.models import Agent
from tests.support.native import _drain

VERSION = "/v1/agents/{agentId}/versions/{versionId}"
ASK = {"messages": [{"role": "user", "content": "John Doe is a 35-year-old software engineer"}]}


@pytest.fixture
def document(db: Any) -> dict[str, Any]:
    return dict(json.loads(APIClient().get("/v1/schema", {"format": "json"}).content))


def errors(document: dict[str, Any], schema: dict[str, Any], instance: Any) -> list[str]:
    """What `instance` breaks of `schema`, whose references name the document's components."""
    rooted = {**schema, "components": document["components"]}
    validator = jsonschema.Draft202012Validator(rooted)
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(instance)]


def answer_schema(document: dict[str, Any], route: str, media: str) -> dict[str, Any]:
    operation = document["paths"][f"{VERSION}/{route}"]["post"]
    return dict(operation["responses"]["200"]["content"][media]["schema"])


def test_a_structured_output_agents_invoke_answer_is_the_documented_bare_object(
    make_agent: Any, owner_client: APIClient, document: dict[str, Any]
) -> None:
    agent: Agent = make_agent("PersonExtractor", "tool", config=PERSON_EXTRACTOR["config"])

    answered = owner_client.post(f"/v1/agents/{agent.pk}/versions/latest/invoke", ASK, "json")

    assert answered.status_code == 200, answered.content
    body = answered.json()
    assert body.get("object") != "response"  # the object itself
    assert "name" in body
    schema = answer_schema(document, "invoke", "application/json")
    assert errors(document, schema, body) == []
    # Still a response object's shape when it says it is one.
    assert errors(document, schema, {"object": "response", "id": "resp_1"}) != []


def test_every_event_of_a_process_stream_is_the_documented_event(
    make_agent: Any, owner_client: APIClient, document: dict[str, Any]
) -> None:
    agent: Agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    body = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "text", "text": "3 x 5?"}]}
        ]
    }

    answered = owner_client.post(f"/v1/agents/{agent.pk}/versions/latest/process", body, "json")

    assert answered.status_code == 200
    stream = b"".join(async_to_sync(_drain)(answered.streaming_content)).decode()
    events = [
        {"data": line.removeprefix("data: ")}
        for line in stream.split("\n")
        if line.startswith("data: ")
    ]
    assert len(events) > 5
    schema = answer_schema(document, "process", "text/event-stream")
    content = schema["properties"]["data"]["contentSchema"]
    for event in events:
        assert errors(document, schema, event) == []
        assert errors(document, content, json.loads(event["data"])) == [], event
    objects = {json.loads(e["data"])["object"] for e in events}
    assert objects == {"response", "message", "content"}


def test_a_path_with_an_empty_id_is_a_documented_404(
    owner_client: APIClient, document: dict[str, Any]
) -> None:
    """No route matches `/v1/agents//versions/latest/process`: the API's 404 answers before
    the process view's own error shape could, and the document says so."""
    answered = owner_client.post("/v1/agents//versions/latest/process", {"input": []}, "json")

    assert answered.status_code == 404
    operation = document["paths"][f"{VERSION}/process"]["post"]
    schema = operation["responses"]["404"]["content"]["application/json"]["schema"]
    assert errors(document, schema, answered.json()) == []
