"""The admin of MCP servers (agents/mcp_registry/admin.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Environment, McpServer
from tests.fakes.mcp import SECRET, LiveServer

pytestmark = pytest.mark.django_db


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
