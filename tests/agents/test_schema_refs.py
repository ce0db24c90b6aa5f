"""A JSON Schema's `$ref` never makes the server fetch anything (issue 25, item 1).

Every schema the platform reads resolves `$ref`s within itself only. Each test points its
references at a listener on 127.0.0.1 that records every connection: it must record none. A
config that refers outside its schema is a 400 when it is saved; an MCP server's schema,
read at run time, makes its tool answer why it cannot be used.
"""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from mcp.server.mcpserver import MCPServer
from referencing.exceptions import Unresolvable
from rest_framework.test import APIClient

from agents import json_schemas
from agents.mcp_client import cache
from agents.mcp_client.ssrf import NetworkPolicy
from agents.mcp_client.types import McpEndpoint
from agents.models import Agent, AgentVersion
from agents.runtime.spec import McpServerSpec
from agents.runtime.tools.base import execute
from agents.runtime.tools.mcp import mcp_tools
from tests.factories import CALCULATOR_CONFIG, TASK_CONFIG
from tests.fakes.mcp import LiveServer, invoke, make_agent, mcp_config, register

pytestmark = pytest.mark.django_db


class Listener:
    """A TCP server on loopback that accepts, records and closes every connection."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.port: int = self.socket.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/s.json"

    def _accept(self) -> None:
        while True:
            try:
                peer, _ = self.socket.accept()
            except OSError:  # closed by stop()
                return
            self.connections += 1
            peer.close()

    def stop(self) -> None:
        # Closing alone does not wake the thread blocked in accept() on Linux: shutting
        # the listening socket down does, so the join below returns at once.
        self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        self._thread.join()


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.stop()
    # After the test's last request: every connection attempt so far has been accepted.
    assert served.connections == 0, "a $ref made the server connect to the listener"


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def reffing(ref: str) -> dict[str, Any]:
    """An object schema whose property `text` is the schema at `ref`."""
    return {"type": "object", "properties": {"text": {"$ref": ref}}, "required": ["text"]}


def create(client: APIClient, agent_type: str, config: dict[str, Any]) -> Any:
    body = {"name": "probe", "agentType": agent_type, "config": config}
    return client.post("/v1/agents", body, format="json")


def assert_ref_refused(response: Any, loc: list[Any], where: str, ref: str) -> None:
    assert response.status_code == 400, response.json()
    (error,) = response.json()["detail"]
    assert error["loc"] == loc
    assert error["msg"].startswith(f"invalid JSON Schema at {where}: $ref '{ref}' does not ")
    assert "nothing is fetched" in error["msg"]
    assert not Agent.objects.exists()


# ---------------------------------------------------------------- saved configs


@pytest.mark.parametrize("field", ["inputSchema", "outputSchema"])
def test_a_task_agents_schema_may_not_refer_to_an_address(
    owner_client: APIClient, listener: Listener, field: str
) -> None:
    config = {**TASK_CONFIG, field: reffing(listener.url)}
    response = create(owner_client, "task", config)
    loc = ["body", "config", field]
    assert_ref_refused(response, loc, "properties/text/$ref", listener.url)


def test_a_structured_output_tools_schema_may_not_refer_to_an_address(
    owner_client: APIClient, listener: Listener
) -> None:
    tool = {
        "toolType": "structured_output",
        "name": "answer",
        "description": "The final answer",
        "outputSchema": {"type": "object", "properties": {"x": {"items": reffing(listener.url)}}},
    }
    config = {**copy.deepcopy(CALCULATOR_CONFIG), "tools": [tool]}
    response = create(owner_client, "tool", config)
    loc = ["body", "config", "tools", 0, "outputSchema"]
    assert_ref_refused(response, loc, "properties/x/items/properties/text/$ref", listener.url)


def test_a_new_version_may_not_refer_to_an_address_either(
    owner_client: APIClient, listener: Listener
) -> None:
    agent = create(owner_client, "task", TASK_CONFIG).json()
    config = {**TASK_CONFIG, "inputSchema": reffing(listener.url)}
    url = f"/v1/agents/{agent['id']}/versions"
    response = owner_client.post(url, {"config": config}, format="json")
    assert response.status_code == 400, response.json()
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "config", "inputSchema"]
    assert "properties/text/$ref" in error["msg"]
    assert AgentVersion.objects.filter(agent_id=agent["id"]).count() == 1


@pytest.mark.parametrize(
    "ref",
    [
        "file:///etc/passwd",
        "/etc/passwd",  # relative to the schema's base URI: nowhere, not the disk
        "#/$defs/missing",
        "other.json#/x",
    ],
)
def test_a_reference_to_a_file_or_to_nothing_is_refused(owner_client: APIClient, ref: str) -> None:
    config = {**TASK_CONFIG, "inputSchema": reffing(ref)}
    response = create(owner_client, "task", config)
    assert_ref_refused(response, ["body", "config", "inputSchema"], "properties/text/$ref", ref)
    assert "root:" not in response.content.decode()


def test_the_admin_refuses_a_reference_to_an_address(
    client: Any, admin_user: Any, env: Any, listener: Listener
) -> None:
    client.force_login(admin_user)
    config = {**TASK_CONFIG, "inputSchema": reffing(listener.url)}
    data = {
        "environment": env.pk,
        "name": "probe",
        "agent_type": "task",
        "description": "",
        "version_label": "",
        "config": json.dumps(config),
    }
    response = client.post(reverse("admin:agents_agent_add"), data)
    assert response.status_code == 200, "the form should have been re-rendered"
    (message,) = response.context["adminform"].form.errors["config"]
    assert message.startswith("config.inputSchema: invalid JSON Schema at properties/text/$ref")
    assert not Agent.objects.exists()


LOCAL = {
    "type": "object",
    "properties": {
        "text": {"$ref": "#/$defs/text"},
        "audience": {"$ref": "#/definitions/audience"},
        "tags": {"type": "array", "items": {"$ref": "#tag"}},
    },
    "required": ["text"],
    "$defs": {"text": {"type": "string", "minLength": 2}, "t": {"$anchor": "tag", "enum": ["a"]}},
    "definitions": {"audience": {"type": "string"}},
}


def test_references_within_the_schema_are_followed(owner_client: APIClient) -> None:
    response = create(owner_client, "task", {**TASK_CONFIG, "inputSchema": LOCAL})
    assert response.status_code == 201, response.json()
    url = f"/v1/agents/{response.json()['id']}/versions/latest/invoke-task"

    inputs = {"text": "a story", "audience": "kids", "tags": ["a"]}
    good = owner_client.post(url, {"inputs": inputs}, format="json")
    bad = owner_client.post(url, {"inputs": {"text": "x", "tags": ["b"]}}, format="json")

    assert good.status_code == 200, good.json()
    assert bad.status_code == 400, bad.json()
    errors = {tuple(e["loc"]): e["msg"] for e in bad.json()["detail"]}
    assert set(errors) == {("body", "inputs", "text"), ("body", "inputs", "tags", 0)}
    assert "is too short" in errors[("body", "inputs", "text")]


def test_a_stored_config_that_refers_to_an_address_is_refused_without_a_fetch(
    owner_client: APIClient, listener: Listener
) -> None:
    """A version written before the check (straight into the table here) fails to invoke
    with a 400 naming the reference, and nothing is fetched."""
    agent = create(owner_client, "task", TASK_CONFIG).json()
    config = {**TASK_CONFIG, "inputSchema": reffing(listener.url)}
    AgentVersion.objects.create(agent_id=agent["id"], number=2, config=config)
    url = f"/v1/agents/{agent['id']}/versions/2/invoke-task"

    response = owner_client.post(url, {"inputs": {"text": "hello"}}, format="json")

    assert response.status_code == 400, response.content
    (error,) = response.json()["detail"]
    assert error["loc"] == ["inputSchema"], error
    assert error["msg"].startswith("invalid JSON Schema at properties/text/$ref: $ref"), error


# ---------------------------------------------------------------- MCP servers' schemas


def refusing_server(input_schema: dict[str, Any], output_schema: Any = None) -> MCPServer:
    """An MCP server whose `add` tool lists these schemas (its function is the usual sum)."""

    class Server(MCPServer):
        async def list_tools(self) -> Any:
            tools = await super().list_tools()
            changed = {"input_schema": input_schema}
            if output_schema is not None:
                changed["output_schema"] = output_schema
            return [t.model_copy(update=changed) for t in tools]

    server = Server("refs")

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers and return the sum."""
        return a + b

    return server


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]


def add_through_a_live_server(
    schema: dict[str, Any], output: dict[str, Any] | None = None
) -> tuple[dict[str, Any], Any]:
    """The tools the runtime reads from a live MCP server whose `add` has these schemas,
    and the outcome of calling `add` through them."""
    served = LiveServer(refusing_server(schema, output).streamable_http_app(), "/mcp")
    try:
        policy = NetworkPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
        server = McpServerSpec("calc", McpEndpoint(served.url, policy=policy))
        tools = asyncio.run(mcp_tools([server], taken=set()))
        outcome = asyncio.run(execute(tools["add"], "add", '{"a": 1, "b": 2}'))
    finally:
        served.stop()
    return tools, outcome


def test_an_mcp_tools_input_schema_that_refers_to_an_address_is_not_fetched(
    listener: Listener,
) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": listener.url}, "b": {"type": "number"}},
    }
    tools, outcome = add_through_a_live_server(schema)
    assert outcome.is_error
    assert outcome.content == (
        "MCP server 'calc' offers add with an input schema that cannot be used at "
        f"properties/a/$ref: $ref '{listener.url}' does not resolve within the schema: "
        "only references inside it (such as #/$defs/name) are followed, nothing is fetched"
    )
    assert tools["add"].spec.parameters == {"type": "object", "properties": {}}


def test_an_agents_run_with_such_an_mcp_tool_completes_and_says_why(
    owner_client: APIClient, listener: Listener, loopback: None
) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}
    served = LiveServer(refusing_server(schema).streamable_http_app(), "/mcp")
    try:
        server = register(owner_client, served.url)
        agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
        answer = invoke(owner_client, agent, "Please add 2 and 3")
    finally:
        served.stop()
    (result,) = answer.results
    assert "cannot be used at properties/a/$ref: $ref 'file:///etc/passwd'" in result
    assert "root:" not in json.dumps(answer.run)


def test_an_mcp_tools_output_schema_that_refers_to_an_address_is_not_fetched(
    listener: Listener,
) -> None:
    """The SDK checks a result against the tool's outputSchema itself, with a registry of
    nothing: this holds it to that."""
    output = {"type": "object", "properties": {"result": {"$ref": listener.url}}}
    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    _, outcome = add_through_a_live_server(schema, output)
    assert outcome.is_error
    assert "Invalid schema for tool add" in outcome.content


# ---------------------------------------------------------------- the module itself


def test_a_validator_built_around_the_check_still_fetches_nothing(listener: Listener) -> None:
    """The registry behind every validator refuses what the walk did not see coming."""
    validator = json_schemas.validator({"type": "object"})
    evolved = validator.evolve(schema=reffing(listener.url))
    with pytest.raises(Unresolvable) as raised:
        list(evolved.iter_errors({"text": 1}))
    assert str(raised.value) == f"Unresolvable: {listener.url}"


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"properties": {"enum": {"$ref": "http://x/"}}}, ("properties", "enum", "$ref")),
        ({"properties": {"$ref": {"$ref": "http://x/"}}}, ("properties", "$ref", "$ref")),
        ({"allOf": [{}, {"$ref": "http://x/"}]}, ("allOf", 1, "$ref")),
        ({"$defs": {"a": {"$dynamicRef": "http://x/"}}}, ("$defs", "a", "$dynamicRef")),
    ],
)
def test_the_check_finds_references_wherever_a_schema_may_hold_them(
    schema: dict[str, Any], path: tuple[str | int, ...]
) -> None:
    with pytest.raises(json_schemas.SchemaRefused) as refused:
        json_schemas.check(schema)
    assert refused.value.path == path


def test_data_that_looks_like_a_reference_is_only_data() -> None:
    schema = {"const": {"$ref": "http://x/"}, "default": {"$ref": "http://x/"}}
    json_schemas.check(schema)
    assert [e.message for e in json_schemas.errors({"$ref": "http://x/"}, schema)] == []


def test_subschemas_with_their_own_id_and_metaschemas_resolve_without_fetching() -> None:
    schema = {
        "$id": "https://schemas.invalid/root.json",
        "properties": {
            "n": {"$ref": "item.json"},
            "s": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
        },
        "$defs": {"item": {"$id": "item.json", "type": "integer"}},
    }
    json_schemas.check(schema)
    found = json_schemas.errors({"n": "x", "s": {"type": 5}}, schema)
    assert [list(e.absolute_path) for e in found] == [["n"], ["s", "type"]]
