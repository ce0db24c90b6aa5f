"""mcp tools in a run (agents/runtime/tools/mcp.py) against a real MCP server
(tests/fakes/mcp.py): calls and results, the brief listing cache, allowed tools, a server
that is down, slow or failing, clashing names, huge results."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.mcp_client import cache
from agents.mcp_client.ssrf import NetworkPolicy
from agents.mcp_client.types import McpEndpoint
from agents.models import Run
from agents.runtime.spec import McpServerSpec
from agents.runtime.tools.mcp import mcp_tools
from tests.fakes.mcp import LiveServer, free_port, invoke, make_agent, mcp_config, register
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn

pytestmark = pytest.mark.django_db


def test_an_agent_calls_an_mcp_tool_and_reads_its_result(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    answer = invoke(owner_client, agent, "Please add 2 and 3")
    assert answer.calls == [("add", '{"a": 2, "b": 3}')]
    assert answer.results == ["5.0"]
    assert answer.text == "The result of add(2, 3) is 5.0."

    echoed = invoke(owner_client, agent, 'Echo "hello there"')
    assert echoed.results == ["hello there"]


def test_runs_list_a_server_once_and_reuse_the_listing_briefly(
    owner_client: APIClient,
    live: LiveServer,
    loopback: None,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listings: list[str] = []
    real = cache.list_tools

    async def counted(endpoint: McpEndpoint) -> Any:
        listings.append(endpoint.url)
        return await real(endpoint)

    monkeypatch.setattr(cache, "list_tools", counted)
    server = register(owner_client, live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    invoke(owner_client, agent, "Please add 2 and 3")
    invoke(owner_client, agent, "Please add 4 and 5")
    assert len(listings) == 1

    settings.MCP_TOOLS_CACHE_SECONDS = 0
    cache.clear()
    invoke(owner_client, agent, "Please add 2 and 3")
    invoke(owner_client, agent, "Please add 4 and 5")
    assert len(listings) == 3


def test_allowed_tools_are_the_only_ones_offered_and_run(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    server = register(owner_client, live.url)
    reference = {"id": server["id"], "toolConfiguration": {"allowedTools": ["echo"]}}
    with FakeOpenAI() as fake:
        settings.LLM_OFFLINE = False
        settings.OPENAI_BASE_URL = fake.base_url
        settings.OPENAI_API_KEY = "sk-test"
        fake.script(
            Turn(
                calls=[
                    Call("add", {"a": 1, "b": 2}, id="c1"),
                    Call("echo", {"text": "hi"}, id="c2"),
                ]
            ),
            Turn(text=["Done."]),
        )
        agent = make_agent(owner_client, mcp_config(reference, model="openai/gpt-4o-mini"))
        answer = invoke(owner_client, agent, "Add 1 and 2, then echo hi")
        offered = [t["function"]["name"] for t in fake.bodies[0]["tools"]]
        results = {
            m["tool_call_id"]: m["content"]
            for m in fake.bodies[1]["messages"]
            if m["role"] == "tool"
        }
    assert offered == ["echo"]
    assert results == {"c1": "Error: unknown tool 'add'", "c2": "hi"}  # as OpenAI is told
    assert answer.text == "Done."


def test_a_server_that_is_down_becomes_a_tool_result_and_the_run_completes(
    owner_client: APIClient, loopback: None
) -> None:
    server = register(owner_client, f"http://127.0.0.1:{free_port()}/mcp")
    reference = {"id": server["id"], "toolConfiguration": {"allowedTools": ["add"]}}
    agent = make_agent(owner_client, mcp_config(reference))
    answer = invoke(owner_client, agent, "Please add 2 and 3")
    assert [name for name, _ in answer.calls] == ["add"]
    (result,) = answer.results
    assert result.startswith("MCP server 'calc' is unavailable: cannot connect")
    assert answer.text.startswith("I could not use add: MCP server 'calc' is unavailable")


def test_a_server_that_goes_down_after_listing_becomes_a_tool_result(
    owner_client: APIClient, own_live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, own_live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    assert owner_client.get(f"/v1/mcp-servers/{server['id']}/tools").status_code == 200
    own_live.stop()  # the listing stays cached: the model still sees `add`
    answer = invoke(owner_client, agent, "Please add 2 and 3")
    assert answer.calls == [("add", '{"a": 2, "b": 3}')]
    assert answer.results[0].startswith("MCP server 'calc' is unavailable")


def test_a_server_without_allowed_tools_that_is_down_offers_one_tool_that_says_so(
    owner_client: APIClient, loopback: None
) -> None:
    server = register(owner_client, f"http://127.0.0.1:{free_port()}/mcp", name="weather")
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    answer = invoke(owner_client, agent, "What is the weather?")
    assert [name for name, _ in answer.calls] == ["weather"]
    assert answer.results[0].startswith("MCP server 'weather' is unavailable")


def test_a_slow_tool_times_out_as_an_error_result(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, timeout=1)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    started = time.monotonic()
    answer = invoke(owner_client, agent, "Sleep 60 seconds")
    # The tool's 60 s were not waited for: its 1 s timeout ended the call. Half of them
    # leaves a loaded machine room for the rest of the run.
    assert time.monotonic() - started < 30
    assert answer.calls == [("slow", '{"seconds": 60}')]
    assert answer.results == ["MCP server 'calc' timed out: no answer within 1 s"]


def test_a_failing_tool_answers_with_the_servers_message(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    answer = invoke(owner_client, agent, "boom")
    assert answer.results == ["Error executing tool boom: the boom tool always fails"]
    assert answer.text.startswith("I could not use boom:")


def test_tool_names_that_clash_are_prefixed_with_the_server_name(
    live: LiveServer, loopback: None
) -> None:
    endpoint = McpEndpoint(live.url, policy=NetworkPolicy(allowed_hosts=frozenset({"127.0.0.1"})))
    servers = [McpServerSpec("calc", endpoint), McpServerSpec("calc2", endpoint, ("add",))]
    tools = asyncio.run(mcp_tools(servers, taken={"add"}))
    assert list(tools) == ["calc_add", "echo", "slow", "boom", "whoami", "flood", "calc2_add"]
    outcome = asyncio.run(tools["calc2_add"].call({"a": 1, "b": 1}))
    assert outcome.content == "2.0"


def test_a_huge_result_is_cut_before_the_model_reads_it(live: LiveServer) -> None:
    endpoint = McpEndpoint(live.url, policy=NetworkPolicy(allowed_hosts=frozenset({"127.0.0.1"})))
    tools = asyncio.run(mcp_tools([McpServerSpec("calc", endpoint, ("flood",))], taken=set()))
    outcome = asyncio.run(tools["flood"].call({"size": 250_000}))
    assert len(outcome.content) < 100_100
    assert outcome.content.endswith("[cut: the result had 250000 characters]")


def test_a_run_refuses_to_connect_where_the_guard_now_forbids(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    server = register(owner_client, live.url)
    reference = {"id": server["id"], "toolConfiguration": {"allowedTools": ["add"]}}
    agent = make_agent(owner_client, mcp_config(reference))
    settings.MCP_ALLOWED_HOSTS = []
    (result,) = invoke(owner_client, agent, "add 1 and 2").results
    assert result.startswith("MCP server 'calc' is not allowed: '127.0.0.1' is a loopback address")


def test_runs_record_the_mcp_calls(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    invoke(owner_client, agent, "Please add 2 and 3")
    run = Run.objects.get()
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool", "assistant"]


def test_an_mcp_servers_tools_need_approval_as_its_tool_configuration_says(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    # Every tool of the server waits for a person, except `echo`.
    configuration = {"requireApproval": "always", "toolApprovals": {"echo": "never"}}
    reference = {"id": server["id"], "toolConfiguration": configuration}
    agent = make_agent(owner_client, mcp_config(reference))
    url = f"/v1/agents/{agent['id']}/versions/latest/invoke"

    echoed = invoke(owner_client, agent, 'Echo "hello there"')  # runs: no approval
    assert echoed.results == ["hello there"]

    asked = owner_client.post(
        url, {"messages": [{"role": "user", "content": "Please add 2 and 3"}]}, format="json"
    )
    assert asked.status_code == 200, asked.content
    body = asked.json()
    assert body["status"] == "awaiting_approval"
    [request] = body["approvalRequests"]
    assert (request["name"], request["arguments"]) == ("add", '{"a": 2, "b": 3}')
    run_id = asked["X-Run-Id"]
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"

    decision = {"approvalRequestId": request["approvalRequestId"], "decision": "approve"}
    resumed = owner_client.post(
        f"/v1/runs/{run_id}/approvals", {"decisions": [decision]}, format="json"
    )
    assert resumed.status_code == 200, resumed.content
    assert resumed.json()["output"][-1]["content"][0]["text"] == "The result of add(2, 3) is 5.0."
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed"
    assert [m["content"] for m in run.messages if m["role"] == "tool"] == ["5.0"]
