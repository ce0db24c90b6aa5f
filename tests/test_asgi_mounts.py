"""The apps' ASGI endpoints beside Django (agentbuilder.asgi_mounts), against a live uvicorn
serving agentbuilder.asgi:application: the agents app mounts its MCP server at start-up,
and the project routes /v1/mcp to it, with or without a trailing slash, and nothing else."""

from __future__ import annotations

import httpx2
import pytest

from agentbuilder import asgi_mounts
from agents.protocols.mcp_server import asgi as mcp_asgi
from tests.live import platform_port  # noqa: F401 (the fixture `port`)

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_the_agents_app_mounts_its_mcp_server() -> None:
    assert asgi_mounts.endpoints() == {"/v1/mcp": mcp_asgi.endpoint}


@LIVE
@pytest.mark.parametrize("path", ["/v1/mcp", "/v1/mcp/"])
def test_a_mounted_path_reaches_its_endpoint(port: int, path: str) -> None:
    response = httpx2.post(f"http://127.0.0.1:{port}{path}", json={}, timeout=30)
    # The MCP endpoint's own 401: its challenge names the resource's metadata (RFC 9728),
    # which Django's /v1 routes do not.
    assert response.status_code == 401
    assert "resource_metadata=" in response.headers["WWW-Authenticate"]


@LIVE
def test_a_path_beside_a_mounted_one_is_django_s(port: int) -> None:
    response = httpx2.post(f"http://127.0.0.1:{port}/v1/mcpx", json={}, timeout=30)
    assert response.status_code == 404
    assert "resource_metadata=" not in response.headers.get("WWW-Authenticate", "")
