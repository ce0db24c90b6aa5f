"""MCP tools against a real MCP server: the SDK's own server (`MCPServer`, FastMCP before
mcp 2), served over streamable HTTP on 127.0.0.1 from a background thread.

Loopback is exactly what the address guard refuses by default, so the tests that talk to
the server allow 127.0.0.1 explicitly (`loopback`); the SSRF tests run without it.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from rest_framework.test import APIClient

from agentbuilder.errors import Invalid
from agents.access.permissions import Action, grant
from agents.mcp_client import cache
from agents.mcp_client.ssrf import NetworkPolicy, UrlRefused, check_url, policy_from_settings
from agents.mcp_client.types import McpEndpoint
from agents.mcp_registry.request import McpServerRequest
from agents.mcp_registry.run_servers import request_server_specs
from agents.mcp_registry.secrets import HeadersUnreadable, decrypt_headers
from agents.models import Environment, McpServer, Run
from agents.runtime.spec import McpServerSpec
from agents.runtime.tools.mcp import mcp_tools
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.invocations import invocation_start
from tests.live import LiveApp

pytestmark = pytest.mark.django_db

SECRET = "Bearer s3cr3t-value-42"
TOOL_NAMES = ["add", "echo", "slow", "boom", "whoami", "flood"]

# ---------------------------------------------------------------- the MCP server


def tools_server() -> MCPServer:
    server = MCPServer("test-tools")

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers and return the sum."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back unchanged."""
        return text

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for some seconds before answering."""
        await asyncio.sleep(seconds)
        return "awake"

    @server.tool()
    def boom() -> str:
        """Always fails, on purpose."""
        raise ToolError("the boom tool always fails")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Tell which credentials the caller sent."""
        return (ctx.headers or {}).get("authorization", "anonymous")

    @server.tool()
    def flood(size: int) -> str:
        """Answer with this many characters."""
        return "x" * size

    return server


class LiveServer(LiveApp):
    def __init__(self, app: Any, path: str) -> None:
        # The MCP apps start their session manager in the ASGI lifespan.
        super().__init__(app, lifespan="on", timeout_graceful_shutdown=1)
        self.path = path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"


def serve(transport: str = "streamable_http") -> LiveServer:
    mcp = tools_server()
    if transport == "sse":
        return LiveServer(mcp.sse_app(), "/sse")
    return LiveServer(mcp.streamable_http_app(), "/mcp")


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    server = serve()
    yield server
    server.stop()


@pytest.fixture
def own_live() -> Iterator[LiveServer]:
    """A server of this test's own, which it may stop."""
    server = serve()
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


# ---------------------------------------------------------------- helpers


def register(client: APIClient, url: str, status: int = 201, **fields: Any) -> dict[str, Any]:
    body = {"name": "calc", "url": url, **fields}
    response = client.post("/v1/mcp-servers", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def mcp_config(*references: dict[str, Any], model: str = "local.demo-v1") -> dict[str, Any]:
    return {
        "llmModelId": model,
        "systemPrompt": "Use the tools.",
        "tools": [{"toolType": "mcp", "mcpServerReferences": list(references)}],
    }


def make_agent(client: APIClient, config: dict[str, Any], status: int = 201) -> Any:
    body = {"name": "mcp-agent", "agentType": "tool", "config": config}
    response = client.post("/v1/agents", body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


@dataclass
class Answer:
    body: dict[str, Any]
    run: dict[str, Any]

    @property
    def calls(self) -> list[tuple[str, str]]:
        return [
            (x["name"], x["arguments"]) for x in self.body["output"] if x["type"] == "function_call"
        ]

    @property
    def results(self) -> list[str]:
        return [m["content"] for m in self.run["messages"] if m["role"] == "tool"]

    @property
    def text(self) -> str:
        return str(self.body["output"][-1]["content"][0]["text"])


def invoke(client: APIClient, agent: dict[str, Any], question: str) -> Answer:
    url = f"/v1/agents/{agent['id']}/versions/latest/invoke"
    response = client.post(
        url, {"messages": [{"role": "user", "content": question}]}, format="json"
    )
    assert response.status_code == 200, response.content
    run = client.get(f"/v1/runs/{response['X-Run-Id']}").json()
    assert run["status"] == "completed", run
    return Answer(response.json(), run)


# ---------------------------------------------------------------- registry and listing


def test_registered_headers_are_encrypted_at_rest_and_never_answered(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, headers={"Authorization": SECRET})
    assert server["headerNames"] == ["Authorization"]
    listed = owner_client.get("/v1/mcp-servers").content.decode()
    shown = owner_client.get(f"/v1/mcp-servers/{server['id']}").content.decode()
    for answer in (str(server), listed, shown):
        assert "s3cr3t" not in answer
    with connection.cursor() as cursor:
        cursor.execute("SELECT headers_encrypted FROM agents_mcpserver")
        (stored,) = cursor.fetchone()
    assert stored
    assert "s3cr3t" not in stored
    assert decrypt_headers(stored) == {"Authorization": SECRET}


def test_the_server_receives_the_decrypted_headers(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, headers={"Authorization": SECRET})
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    answer = invoke(owner_client, agent, "whoami")
    assert answer.calls == [("whoami", "{}")]
    assert answer.results == [SECRET]


def test_tools_are_listed_live_with_their_schemas(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    response = owner_client.get(f"/v1/mcp-servers/{server['id']}/tools")
    assert response.status_code == 200, response.json()
    tools = {t["name"]: t for t in response.json()["tools"]}
    assert sorted(tools) == sorted(TOOL_NAMES)
    assert tools["add"]["description"] == "Add two numbers and return the sum."
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]


def test_an_sse_server_is_listed_too(owner_client: APIClient, loopback: None) -> None:
    sse = serve("sse")
    try:
        server = register(owner_client, sse.url, transport="sse")
        response = owner_client.get(f"/v1/mcp-servers/{server['id']}/tools")
    finally:
        sse.stop()
    assert response.status_code == 200, response.json()
    assert sorted(t["name"] for t in response.json()["tools"]) == sorted(TOOL_NAMES)


def test_listing_a_server_that_is_down_is_a_502(owner_client: APIClient, loopback: None) -> None:
    server = register(owner_client, f"http://127.0.0.1:{free_port()}/mcp")
    response = owner_client.get(f"/v1/mcp-servers/{server['id']}/tools")
    assert response.status_code == 502
    assert response.json()["detail"].startswith("MCP server 'calc' is unavailable: cannot connect")


def test_listing_a_server_whose_address_is_no_longer_allowed_is_a_409_saying_why(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    server = register(owner_client, live.url)
    settings.MCP_ALLOWED_HOSTS = []  # the operator withdrew the loopback address

    response = owner_client.get(f"/v1/mcp-servers/{server['id']}/tools")

    assert response.status_code == 409  # the policy's refusal, not a failure of the server's
    detail = response.json()["detail"]
    assert detail.startswith("MCP server 'calc' is not allowed: ")
    assert "MCP_ALLOWED_HOSTS" in detail


# ---------------------------------------------------------------- runs


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


def test_headers_that_cannot_be_decrypted_make_the_server_unavailable(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    server = register(owner_client, live.url, headers={"Authorization": SECRET})
    stored = McpServer.objects.get(pk=server["id"]).headers_encrypted
    old_key = settings.MCP_SECRETS_KEY
    settings.MCP_SECRETS_KEY = "a-new-key"
    with pytest.raises(HeadersUnreadable):
        decrypt_headers(stored)
    settings.MCP_SECRETS_KEY_FALLBACKS = [old_key]
    assert decrypt_headers(stored) == {"Authorization": SECRET}
    settings.MCP_SECRETS_KEY_FALLBACKS = []
    response = owner_client.get(f"/v1/mcp-servers/{server['id']}/tools")
    assert response.status_code == 502
    assert "cannot be decrypted" in response.json()["detail"]


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


# ---------------------------------------------------------------- server-side request forgery

FORBIDDEN_URLS = [
    ("http://127.0.0.1:8000/mcp", "loopback"),
    ("http://10.0.0.1/mcp", "private"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://[::1]:8000/mcp", "loopback"),
    ("http://[::ffff:127.0.0.1]/mcp", "loopback"),
    ("http://localhost:8000/mcp", "loopback"),
    ("http://0.0.0.0/mcp", "unspecified"),
    ("http://224.0.0.1/mcp", "multicast"),
    ("http://100.64.0.1/mcp", "reserved"),
]


@pytest.mark.parametrize(("url", "kind"), FORBIDDEN_URLS, ids=[u for u, _ in FORBIDDEN_URLS])
def test_registering_a_non_public_address_is_refused_by_default(
    owner_client: APIClient, url: str, kind: str
) -> None:
    body = register(owner_client, url, status=400)
    (error,) = body["detail"]
    assert error["loc"] == ["body", "url"]
    assert f"a {kind} address" in error["msg"]
    assert not McpServer.objects.exists()


@pytest.mark.parametrize(
    "url", ["ftp://example.com/mcp", "file:///etc/passwd", "http://user:pw@example.com/mcp"]
)
def test_only_plain_http_urls_are_accepted(owner_client: APIClient, url: str) -> None:
    (error,) = register(owner_client, url, status=400)["detail"]
    assert error["loc"] == ["body", "url"]


def test_settings_open_private_networks_but_never_link_local(settings: Any) -> None:
    settings.MCP_ALLOW_PRIVATE_NETWORKS = True
    for url in ("http://127.0.0.1/mcp", "http://10.0.0.1/mcp", "http://localhost/mcp"):
        check_url(url, policy_from_settings())
    with pytest.raises(UrlRefused, match="link-local"):
        check_url("http://169.254.169.254/", policy_from_settings())
    settings.MCP_ALLOWED_HOSTS = ["169.254.0.0/16"]
    check_url("http://169.254.169.254/", policy_from_settings())


def test_a_public_address_passes_the_guard() -> None:
    check_url("https://93.184.215.14/mcp", NetworkPolicy())


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


def test_a_run_refuses_to_connect_where_the_guard_now_forbids(
    owner_client: APIClient, live: LiveServer, loopback: None, settings: Any
) -> None:
    server = register(owner_client, live.url)
    reference = {"id": server["id"], "toolConfiguration": {"allowedTools": ["add"]}}
    agent = make_agent(owner_client, mcp_config(reference))
    settings.MCP_ALLOWED_HOSTS = []
    (result,) = invoke(owner_client, agent, "add 1 and 2").results
    assert result.startswith("MCP server 'calc' is not allowed: '127.0.0.1' is a loopback address")


# ---------------------------------------------------------------- config references


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


# ---------------------------------------------------------------- permissions


@pytest.fixture
def reader(env: Environment) -> Any:
    user = UserFactory(username="reader")
    grant(user, Action.READ, env)
    return user


def test_readers_list_and_see_but_only_editors_write(
    owner_client: APIClient, reader: Any, stranger: Any, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, headers={"X-Key": "k"})
    detail = f"/v1/mcp-servers/{server['id']}"
    as_reader = client_for(reader)
    assert as_reader.get("/v1/mcp-servers").json()["mcpServers"][0]["id"] == server["id"]
    assert as_reader.get(detail).status_code == 200
    assert as_reader.get(f"{detail}/tools").status_code == 200
    new = {"name": "x", "url": live.url}
    assert as_reader.post("/v1/mcp-servers", new, format="json").status_code == 403
    assert as_reader.patch(detail, {"enabled": False}, format="json").status_code == 403
    assert as_reader.delete(detail).status_code == 403

    as_stranger = client_for(stranger)
    assert as_stranger.get("/v1/mcp-servers").status_code == 403
    for path in (detail, f"{detail}/tools"):
        assert as_stranger.get(path).status_code == 404
    assert as_stranger.delete(detail).status_code == 404

    patched = owner_client.patch(detail, {"name": "calc2", "timeout": 5}, format="json").json()
    assert (patched["name"], patched["timeout"], patched["headerNames"]) == ("calc2", 5, ["X-Key"])
    replaced = owner_client.patch(detail, {"headers": {"Authorization": "t"}}, format="json")
    assert replaced.json()["headerNames"] == ["Authorization"]
    assert owner_client.delete(detail).json() == {"serverId": server["id"]}
    assert not McpServer.objects.exists()


@pytest.mark.parametrize(
    ("headers", "where"),
    [({"Host": "evil"}, "Host"), ({"Bad Name": "x"}, "Bad Name"), ({"X-A": "a\r\nB: b"}, "X-A")],
)
def test_headers_that_would_break_requests_are_refused(
    owner_client: APIClient, live: LiveServer, loopback: None, headers: dict[str, str], where: str
) -> None:
    (error,) = register(owner_client, live.url, status=400, headers=headers)["detail"]
    assert error["loc"] == ["body", "headers", where]


def test_names_are_unique_per_environment_and_global_servers_are_for_superusers(
    owner_client: APIClient,
    admin_user: Any,
    other_env: Environment,
    live: LiveServer,
    loopback: None,
) -> None:
    register(owner_client, live.url)
    assert register(owner_client, live.url, status=409, name="CALC")["detail"] == (
        "MCP server 'CALC' already exists in environment 'default'"
    )
    register(owner_client, live.url, status=403, name="shared", scope="global")
    shared = register(client_for(admin_user), live.url, name="shared", scope="global")
    assert shared["environmentId"] is None
    names = [s["name"] for s in owner_client.get("/v1/mcp-servers").json()["mcpServers"]]
    assert names == ["calc", "shared"]
    assert owner_client.delete(f"/v1/mcp-servers/{shared['id']}").status_code == 403
    foreign = McpServer.objects.create(environment=other_env, name="x", url=live.url)
    assert owner_client.get(f"/v1/mcp-servers/{foreign.pk}").status_code == 404


# ---------------------------------------------------------------- admin


def test_the_admin_registers_a_server_and_never_shows_header_values(
    client: Any, admin_user: Any, env: Environment, live: LiveServer, loopback: None
) -> None:
    client.force_login(admin_user)
    form = {
        "environment": str(env.pk),
        "name": "calc",
        "description": "",
        "url": live.url,
        "transport": "streamable_http",
        "timeout": "10",
        "enabled": "on",
        "headers": f"Authorization: {SECRET}\nX-Team: blue",
    }
    response = client.post("/admin/agents/mcpserver/add/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    server = McpServer.objects.get()
    assert server.header_names == ["Authorization", "X-Team"]
    page = client.get(f"/admin/agents/mcpserver/{server.pk}/change/").content.decode()
    assert "Authorization, X-Team" in page
    assert "s3cr3t" not in page

    refused = client.post("/admin/agents/mcpserver/add/", {**form, "url": "http://10.0.0.1/"})
    assert "a private address" in refused.content.decode()


def test_runs_record_the_mcp_calls(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url)
    agent = make_agent(owner_client, mcp_config({"id": server["id"]}))
    invoke(owner_client, agent, "Please add 2 and 3")
    run = Run.objects.get()
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool", "assistant"]


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


# ---------------------------------------------------------------- chat completions' mcp_servers


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


def test_a_new_host_in_the_url_drops_the_stored_secrets(
    owner_client: APIClient, live: LiveServer, loopback: None
) -> None:
    server = register(owner_client, live.url, headers={"Authorization": "Bearer s3cret"})
    detail = f"/v1/mcp-servers/{server['id']}"
    same_host = live.url.rstrip("/") + "/v2"
    other_port = live.url.replace(f":{live.port}", f":{live.port + 1}")

    kept = owner_client.patch(detail, {"url": same_host}, format="json").json()
    moved = owner_client.patch(detail, {"url": other_port}, format="json").json()

    assert kept["headerNames"] == ["Authorization"]
    assert moved["headerNames"] == []
    assert decrypt_headers(McpServer.objects.get().headers_encrypted) == {}
    # Headers given with the new URL are the new host's own.
    given = {"url": live.url, "headers": {"Authorization": "Bearer new"}}
    again = owner_client.patch(detail, given, format="json").json()
    assert again["headerNames"] == ["Authorization"]
    assert decrypt_headers(McpServer.objects.get().headers_encrypted) == {
        "Authorization": "Bearer new"
    }
