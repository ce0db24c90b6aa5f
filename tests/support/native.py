"""The native invoke routes as a client sees them: docs/api.md#invoke as JSON schemas, an
`Answer` read from a call (a stream read whole and checked line by line), the run a call
recorded, and the example agents on whichever backend a test runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from agents.examples import CALCULATOR, PERSON_EXTRACTOR
from agents.llm.base import Usage
from agents.models import Agent, Run
from tests.support.backends import Backend

# ---------------------------------------------------------------- docs/api.md#invoke as schemas

USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
USAGE: dict[str, Any] = {
    "type": "object",
    # cached_input_tokens: where a provider reported a cache hit (docs/api.md#runs).
    "properties": {
        key: {"type": "integer", "minimum": 0} for key in (*USAGE_KEYS, "cached_input_tokens")
    },
    "required": list(USAGE_KEYS),
    "additionalProperties": False,
}
ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "minLength": 1}, "message": {"type": "string"}},
    "required": ["code", "message"],
    "additionalProperties": False,
}
TEXT = {"type": "string", "minLength": 1}
HEAD: dict[str, Any] = {
    "id": TEXT,
    "model": TEXT,
    "object": {"const": "response"},
    "createdAt": {"type": "integer", "minimum": 0},
}


def _response(required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**HEAD, **extra},
        "required": [*HEAD, *required],
        "additionalProperties": False,
    }


def _line(kind: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, **properties},
        "required": ["type", *properties],
        "additionalProperties": False,
    }


CREATED, DELTA, CALL = (
    "response.created",
    "response.output_text.delta",
    "response.function_call_arguments.done",
)
COMPLETED, FAILED = "response.completed", "response.failed"
LINE_SCHEMAS: dict[str, dict[str, Any]] = {
    CREATED: _line(CREATED, response=_response()),
    DELTA: _line(DELTA, role={"const": "assistant"}, delta={"type": "string"}, id=TEXT),
    CALL: _line(CALL, id=TEXT, name=TEXT, itemId=TEXT, arguments={"type": "string"}),
    COMPLETED: _line(
        COMPLETED, response=_response(("usage",), usage=USAGE, customOutputs={"type": "object"})
    ),
    FAILED: _line(
        FAILED,
        response=_response(("error",), usage=USAGE, customOutputs={"type": "object"}, error=ERROR),
    ),
}
FUNCTION_CALL_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"const": "function_call"},
        "status": {"const": "completed"},
        "callId": TEXT,
        "name": TEXT,
        "arguments": {"type": "string"},
    },
    "required": ["type", "status", "callId", "name", "arguments"],
    "additionalProperties": False,
}
MESSAGE_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"const": "message"},
        "status": {"const": "completed"},
        "role": {"const": "assistant"},
        "content": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"type": {"const": "output_text"}, "text": {"type": "string"}},
                "required": ["type", "text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["type", "status", "role", "content"],
    "additionalProperties": False,
}
RESPONSE_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        **HEAD,
        "output": {
            "type": "array",
            "minItems": 1,
            "items": {"oneOf": [FUNCTION_CALL_ITEM, MESSAGE_ITEM]},
        },
        "customOutputs": {"type": "object"},
        "usage": USAGE,
    },
    "required": ["object", "id", "createdAt", "model", "output", "usage"],
    "additionalProperties": False,
}
# customOutputs of a RAG agent (docs/api.md#rag-outputs).
SOURCE_NODE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": TEXT,
        "docId": TEXT,
        "objectId": TEXT,
        "chunkId": TEXT,
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "text": {"type": "string"},
    },
    "required": ["id", "docId", "objectId", "chunkId", "score", "text"],
    "additionalProperties": False,
}
HALLUCINATION_CHECK: dict[str, Any] = {
    "type": "object",
    "properties": {
        "grounded": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        # Not in the seed spec: set when the first answer failed the check and was generated again.
        "regenerated": {"type": "boolean"},
    },
    "required": ["grounded", "score"],
    "additionalProperties": False,
}
RAG_OUTPUTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sourceNodes": {"type": "array", "items": SOURCE_NODE},
        "ragMode": {"const": "normal"},
        "hallucinationCheck": HALLUCINATION_CHECK,
    },
    "required": ["sourceNodes", "ragMode"],
    "additionalProperties": False,
}
for _schema in (*LINE_SCHEMAS.values(), RESPONSE_OBJECT, RAG_OUTPUTS):
    jsonschema.Draft202012Validator.check_schema(_schema)


def check(instance: Any, schema: dict[str, Any]) -> None:
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(instance))
    assert not errors, f"{instance} breaks docs/api.md: " + "; ".join(
        f"{e.json_path}: {e.message}" for e in errors
    )


# ---------------------------------------------------------------- answers


@dataclass
class Answer:
    """One call of an invoke route: the JSON body, or the checked lines of a stream."""

    status: int
    headers: Any
    body: Any = None
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.headers["X-Run-Id"]

    @property
    def streamed(self) -> bool:
        return bool(self.lines)

    @property
    def text(self) -> str:
        """The answer's text: the deltas of a stream, the last message of a response."""
        if self.streamed:
            return "".join(line["delta"] for line in self.lines if line["type"] == DELTA)
        return self.body["output"][-1]["content"][0]["text"]

    @property
    def final_text(self) -> str:
        """The text after the last tool call: the answer proper."""
        if not self.streamed:
            return self.text
        kinds = [line["type"] for line in self.lines]
        start = len(kinds) - kinds[::-1].index(CALL) if CALL in kinds else 0
        return "".join(line["delta"] for line in self.lines[start:] if line["type"] == DELTA)

    @property
    def model(self) -> str:
        return self.lines[0]["response"]["model"] if self.streamed else self.body["model"]

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Tool calls as (callId, name, arguments parsed), streamed or not."""
        if self.streamed:
            found = [
                (x["itemId"], x["name"], x["arguments"]) for x in self.lines if x["type"] == CALL
            ]
        else:
            found = [
                (x["callId"], x["name"], x["arguments"])
                for x in self.body["output"]
                if x["type"] == "function_call"
            ]
        return [{"id": i, "name": n, "arguments": json.loads(a)} for i, n, a in found]

    @property
    def usage(self) -> dict[str, int]:
        if self.streamed:
            return self.lines[-1]["response"]["usage"]
        return self.body["usage"]


def invoke(client: APIClient, agent: Agent, route: str, body: dict[str, Any]) -> Answer:
    """POST to an invoke route of the agent's latest version; streams are read whole and
    checked line by line, successful answers checked against docs/api.md#invoke."""
    url = f"/v1/agents/{agent.pk}/versions/latest/{route}"
    response = client.post(url, body, format="json")
    assert response.status_code != 500, response.content
    if response.streaming:
        return Answer(response.status_code, response.headers, lines=read_stream(response))
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    answer = Answer(response.status_code, response.headers, body=response.json())
    if response.status_code == 200:
        uuid.UUID(answer.run_id)
    return answer


async def _drain(content: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in content]


def read_stream(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    assert response["X-Accel-Buffering"] == "no"
    uuid.UUID(response["X-Run-Id"])
    raw = b"".join(async_to_sync(_drain)(response.streaming_content)).decode()
    assert raw.endswith("\n"), "every line, the last too, ends with a newline"
    lines = [json.loads(text) for text in raw.split("\n")[:-1]]
    for line in lines:
        assert line.get("type") in LINE_SCHEMAS, line
        check(line, LINE_SCHEMAS[line["type"]])
        if line["type"] == CALL:
            assert isinstance(json.loads(line["arguments"]), dict)
    kinds = [line["type"] for line in lines]
    assert kinds[0] == CREATED
    assert kinds[-1] in (COMPLETED, FAILED)
    assert kinds.count(COMPLETED) + kinds.count(FAILED) == 1, kinds
    response_id = lines[0]["response"]["id"]
    assert {line.get("id") or line["response"]["id"] for line in lines} == {response_id}
    head = {k: lines[0]["response"][k] for k in HEAD}
    assert {k: lines[-1]["response"][k] for k in HEAD} == head
    return lines


def fetch_run(client: APIClient, answer: Answer) -> dict[str, Any]:
    got = client.get(f"/v1/runs/{answer.run_id}")
    assert got.status_code == 200, got.json()
    return got.json()


def completed_run(client: APIClient, answer: Answer, usage: dict[str, int]) -> dict[str, Any]:
    """The run of a successful answer, checked: completed, timed, its usage the answer's."""
    run = fetch_run(client, answer)
    assert run["status"] == "completed", run
    assert run["protocol"] == "native"
    assert run["latencyMs"] >= 0
    assert run["completedAt"] is not None
    assert run["error"] is None
    assert run["tokensUsage"] == usage
    return run


def no_run_in_progress() -> None:
    assert not Run.objects.filter(status="in_progress").exists()


def usage_sum(usages: list[Usage]) -> dict[str, int]:
    total = Usage()
    for usage in usages:
        total = total + usage
    return total.as_dict()


# ---------------------------------------------------------------- the example agents

REVIEW_TASK: dict[str, Any] = {
    "llmModelId": "anthropic.claude-3-haiku-20240307-v1:0",
    "systemPrompt": "Rate the sentiment of this review of {{ product }}: {{ review }}",
    "inputSchema": {
        "type": "object",
        "properties": {
            "product": {"type": "string"},
            "review": {"type": "string"},
            "stars": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["product", "review"],
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "sentiment": {"type": "string", "enum": ["positive", "negative", "neutral"]},
            "score": {"type": "integer"},
        },
        "required": ["sentiment"],
    },
}


@pytest.fixture
def calculator(make_agent: Any, backend: Backend) -> Agent:
    return make_agent("Calculator", "tool", config=backend.config(CALCULATOR["config"]))


@pytest.fixture
def person_extractor(make_agent: Any, backend: Backend) -> Agent:
    return make_agent("PersonExtractor", "tool", config=backend.config(PERSON_EXTRACTOR["config"]))


@pytest.fixture
def review_task(make_agent: Any, backend: Backend) -> Agent:
    return make_agent("ReviewRater", "task", config=backend.config(REVIEW_TASK))
