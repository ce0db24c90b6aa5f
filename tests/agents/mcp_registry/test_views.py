"""/v1/mcp-servers (agents/mcp_registry/views.py) against a real MCP server (tests/fakes/mcp.py):
registering, reading, changing and removing servers, their tools listed live, headers kept
secret, addresses refused, and who may do what."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.mcp_registry.secrets import HeadersUnreadable, decrypt_headers
from agents.models import Environment, McpServer
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.fakes.mcp import SECRET, TOOL_NAMES, LiveServer, free_port, register, serve

pytestmark = pytest.mark.django_db


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
