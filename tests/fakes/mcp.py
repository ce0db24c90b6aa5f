"""A real MCP server for tests: the SDK's own server (`MCPServer`, FastMCP before mcp 2),
served over streamable HTTP (or SSE) on 127.0.0.1 from a background thread; the fixtures
that serve it; and the helpers that register it and run an agent over it.

Loopback is exactly what the address guard refuses by default, so the tests that talk to
the server allow 127.0.0.1 explicitly (`loopback`); the SSRF tests run without it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from rest_framework.test import APIClient

from agents.mcp_client import cache
from tests.live import LiveApp

SECRET = "Bearer s3cr3t-value-42"
TOOL_NAMES = ["add", "echo", "slow", "boom", "whoami", "flood"]


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
