"""A run's MCP servers from the registry (agents/mcp_registry/run_servers.py): the config's
references and the servers a request names (chat completions' `mcp_servers`), raw URLs where
settings allow them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from agentbuilder.errors import Invalid
from agents.mcp_registry.request import McpServerRequest
from agents.mcp_registry.run_servers import request_server_specs
from agents.models import Environment, McpServer, Run
from tests.fakes.mcp import SECRET, LiveServer, invoke, make_agent, mcp_config, register
from tests.invocations import invocation_start

pytestmark = pytest.mark.django_db


def test_a_reference_to_an_unknown_or_other_environments_server_is_refused(
    owner_client: APIClient, other_env: Environment, admin_user: Any
) -> None:
    foreign = McpServer.objects.create(
        environment=other_env, name="foreign", url="https://93.184.215.14/mcp"
    )
    for server_id in (uuid.uuid4(), foreign.pk):
        config = mcp_config({"id": str(server_id)})
        (error,) = make_agent(owner_client, config, status=400)["detail"]
        assert error["loc"] == ["body", "config", "tools", 0, "mcpServerReferences", 0, "id"]
        assert error["msg"] == f"unknown MCP server '{server_id}' in environment 'default'"


def test_a_request_may_name_registered_servers_and_raw_urls_only_where_allowed(
    env: Environment, other_env: Environment, settings: Any
) -> None:
    own = McpServer.objects.create(environment=env, name="calc", url="https://93.184.215.14/a")
    McpServer.objects.create(environment=None, name="calc", url="https://93.184.215.14/b")
    McpServer.objects.create(environment=other_env, name="foreign", url="https://93.184.215.14/c")
    requests = [
        McpServerRequest(("body", "mcp_servers", 0), server="CALC", allowed_tools=("add",)),
        McpServerRequest(("body", "mcp_servers", 1), server="foreign"),
        McpServerRequest(("body", "mcp_servers", 2), url="https://93.184.215.14/mcp"),
    ]
    with pytest.raises(Invalid) as refused:
        request_server_specs(environment=env, requests=requests)
    errors = {tuple(e.loc): e.msg for e in refused.value.errors}
    assert set(errors) == {
        ("body", "mcp_servers", 1, "integration_fqn"),
        ("body", "mcp_servers", 2, "url"),
    }
    (spec,) = request_server_specs(environment=env, requests=requests[:1])
    assert spec.endpoint is not None
    assert spec.endpoint.url == own.url  # the environment's own server wins over a global one
    assert spec.allowed_tools == ("add",)

    settings.MCP_ALLOW_UNREGISTERED_URLS = True
    (raw,) = request_server_specs(environment=env, requests=requests[2:])
    assert raw.endpoint is not None
    assert raw.endpoint.url == "https://93.184.215.14/mcp"


def test_servers_a_request_names_join_the_run_of_a_tool_agent_only(
    env: Environment, owner: Any, make_agent: Any
) -> None:
    McpServer.objects.create(environment=env, name="calc", url="https://93.184.215.14/a")
    named = [McpServerRequest(("body", "mcp_servers", 0), server="calc")]
    common = {"user": owner, "environment": env, "version_ref": "latest", "protocol": "chat"}
    tool_agent = make_agent("tooly")
    invocation = invocation_start(
        agent_id=tool_agent.pk, route="x", agent_types=("tool", "rag"), mcp_servers=named, **common
    )
    assert [s.name for s in invocation.spec.mcp_servers] == ["calc"]

    rag_agent = make_agent("raggy", "rag")
    with pytest.raises(Invalid) as refused:
        invocation_start(
            agent_id=rag_agent.pk,
            route="x",
            agent_types=("tool", "rag"),
            mcp_servers=named,
            **common,
        )
    assert refused.value.errors[0].loc == ("body", "mcp_servers")


def test_the_server_receives_the_decrypted_headers(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, headers={"Authorization": SECRET})
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    answer = invoke(owner_client, agent, "whoami")
    assert answer.calls == [("whoami", "{}")]
    assert answer.results == [SECRET]


def test_a_disabled_or_deleted_server_says_so_when_its_tools_are_called(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    reference = {"id": server["id"], "toolConfiguration": {"allowedTools": ["add"]}}
    agent = make_agent(owner_client, mcp_config(reference))
    owner_client.patch(f"/v1/mcp-servers/{server['id']}", {"enabled": False}, format="json")
    assert invoke(owner_client, agent, "add 1 and 2").results == ["MCP server 'calc' is disabled"]
    owner_client.delete(f"/v1/mcp-servers/{server['id']}")
    (result,) = invoke(owner_client, agent, "add 1 and 2").results
    assert result.endswith("no longer exists")


def test_a_raw_url_reference_is_refused_unless_settings_allow_it(
    owner_client: APIClient, settings: Any
) -> None:
    loc = ["body", "config", "tools", 0, "mcpServerReferences", 0, "url"]
    body = make_agent(owner_client, mcp_config({"url": "https://93.184.215.14/mcp"}), status=400)
    assert body["detail"][0]["loc"] == loc
    assert "unregistered MCP server URLs are not allowed" in body["detail"][0]["msg"]

    settings.MCP_ALLOW_UNREGISTERED_URLS = True
    for url in ("http://127.0.0.1:8000/mcp", "http://169.254.169.254/", "http://localhost/"):
        (error,) = make_agent(owner_client, mcp_config({"url": url}), status=400)["detail"]
        assert error["loc"] == loc
        assert "address: not allowed" in error["msg"]
    make_agent(owner_client, mcp_config({"url": "https://93.184.215.14/mcp"}))


def test_a_raw_url_reference_reaches_the_server_when_allowed(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    settings.MCP_ALLOW_UNREGISTERED_URLS = True
    agent = make_agent(owner_client, mcp_config({"url": live.url}))
    assert invoke(owner_client, agent, "Please add 2 and 3").results == ["5.0"]


# A tool agent of its own tools only (a clock), so that adding comes from the request.
CLOCK_AGENT = {
    "llmModelId": "local.demo-v1",
    "systemPrompt": "Be brief.",
    "tools": [
        {
            "toolType": "function",
            "name": "clock",
            "description": "The current time.",
            "funcName": "current_time",
        }
    ],
}


def chat(client: APIClient, agent: dict[str, Any], *servers: dict[str, Any]) -> Any:
    body = {
        "model": agent["name"],
        "messages": [{"role": "user", "content": "Please add 2 and 3"}],
        "mcp_servers": list(servers),
    }
    return client.post("/v1/chat/completions", body, format="json")


def test_chat_completions_runs_tools_of_the_servers_the_request_names(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    register(owner_client, live.url)
    agent = make_agent(owner_client, CLOCK_AGENT)
    only_echo = {"integration_fqn": "calc", "enable_all_tools": False, "tools": [{"name": "echo"}]}
    answer = chat(owner_client, agent, {"integration_fqn": "CALC"})
    assert answer.status_code == 200, answer.json()
    run = Run.objects.get(pk=answer["X-Run-Id"])
    tool_messages = [m for m in run.messages if m["role"] == "tool"]
    assert [(m["name"], m["content"]) for m in tool_messages] == [("add", "5.0")]
    assert "5" in answer.json()["choices"][0]["message"]["content"]

    # Only the tools the request allows are offered: with `echo` alone, nothing adds.
    narrowed = chat(owner_client, agent, only_echo)
    assert narrowed.status_code == 200, narrowed.json()
    run = Run.objects.get(pk=narrowed["X-Run-Id"])
    assert all(m.get("name") != "add" for m in run.messages if m["role"] == "tool")

    # The same agent without the request's servers cannot add.
    plain = chat(owner_client, agent)
    run = Run.objects.get(pk=plain["X-Run-Id"])
    assert all(m.get("name") != "add" for m in run.messages if m["role"] == "tool")


def test_chat_completions_refuses_unknown_servers_and_raw_urls_in_openai_style(
    owner_client: APIClient, live: LiveServer, settings: Any
) -> None:
    agent = make_agent(owner_client, CLOCK_AGENT)
    unknown = chat(owner_client, agent, {"integration_fqn": "nowhere"})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["param"] == "mcp_servers[0].integration_fqn"
    assert "unknown MCP server 'nowhere'" in unknown.json()["error"]["message"]
    assert Run.objects.get(pk=unknown["X-Run-Id"]).status == "failed"

    raw = chat(owner_client, agent, {"url": live.url})
    assert raw.json()["error"]["param"] == "mcp_servers[0].url"
    assert "unregistered MCP server URLs are not allowed" in raw.json()["error"]["message"]

    settings.MCP_ALLOW_UNREGISTERED_URLS = True  # still not loopback, which is not allowed
    loopback_url = chat(owner_client, agent, {"url": live.url})
    assert loopback_url.status_code == 400
    assert "loopback" in loopback_url.json()["error"]["message"]

    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    allowed = chat(owner_client, agent, {"url": live.url})
    assert allowed.status_code == 200, allowed.json()
    run = Run.objects.get(pk=allowed["X-Run-Id"])
    assert [m["content"] for m in run.messages if m["role"] == "tool"] == ["5.0"]
