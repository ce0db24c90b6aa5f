"""/v1/mcp's checks against DNS rebinding and its OAuth challenge (docs/api.md#mcp),
against a live uvicorn serving agentbuilder.asgi:application: a `Host` outside
ALLOWED_HOSTS is refused as on every other route, a present `Origin` outside
MCP_ALLOWED_ORIGINS is 403, SDK clients (no Origin) are served, and the 401 names the
resource's metadata so the `mcp` SDK's OAuth client goes looking for it.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.test import override_settings
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from agentbuilder.asgi import application
from agents.examples import CALCULATOR
from agents.models import Agent, Run
from agents.protocols.mcp_server.asgi import RESOURCE_METADATA_PATH
from tests.live import live_app
from tests.support.mcp_server import LIVE, bearer, url

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = {"Accept": "application/json, text/event-stream"}
ALLOWED_ORIGIN = "https://console.example.com"


class Seen:
    """The ASGI app, counting the paths it is asked for: what a client did on our server."""

    def __init__(self) -> None:
        self.paths: Counter[str] = Counter()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.paths[scope["path"]] += 1
        await application(scope, receive, send)


@pytest.fixture(scope="module")
def seen() -> Seen:
    return Seen()


@pytest.fixture(scope="module")
def port(reseed_after_module: None, seen: Seen) -> Iterator[int]:
    with live_app(seen) as served:
        yield served.port


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def post(port: int, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(url(port), json=LIST_TOOLS, headers={**ACCEPT, **headers}, timeout=30)


def sse_result(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC result of a one-message SSE answer."""
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    assert len(data) == 1, response.text
    answer: dict[str, Any] = json.loads(data[0])
    return answer["result"]


# ---------------------------------------------------------------- Host


@LIVE
@pytest.mark.parametrize("host", ["evil.example.com", "127.0.0.1.evil.example.com:80"])
def test_a_host_outside_allowed_hosts_is_refused_as_on_every_other_route(
    port: int, owner: Any, host: str
) -> None:
    headers = {**bearer(owner), "Host": host}

    mcp = post(port, headers)
    rest = httpx2.get(f"http://127.0.0.1:{port}/v1/agents", headers=headers, timeout=30)

    assert rest.status_code == 400  # Django's own check, on a route it serves
    assert (mcp.status_code, mcp.json()) == (rest.status_code, rest.json())
    assert mcp.headers["Content-Type"] == "application/json"


@LIVE
def test_a_host_in_allowed_hosts_is_served(port: int, owner: Any, calculator: Agent) -> None:
    response = post(port, {**bearer(owner), "Host": f"localhost:{port}"})

    assert response.status_code == 200
    assert [tool["name"] for tool in sse_result(response)["tools"]] == ["Calculator"]


# ---------------------------------------------------------------- Origin


@LIVE
@pytest.mark.parametrize("token", [True, False], ids=["with a token", "without"])
def test_a_foreign_origin_is_403_before_anything_else(
    port: int, owner: Any, calculator: Agent, token: bool
) -> None:
    # A page on any site, the server's own name rebound to it included: with the list empty
    # (the default), every browser origin is foreign.
    for origin in ("https://evil.example.com", f"http://127.0.0.1:{port}", "null"):
        response = post(port, {**(bearer(owner) if token else {}), "Origin": origin})

        assert response.status_code == 403, origin
        assert response.headers["Content-Type"] == "application/json"
        assert "MCP_ALLOWED_ORIGINS" in response.json()["detail"]
    assert not Run.objects.exists()


@LIVE
def test_a_listed_origin_is_served_and_others_are_still_refused(
    port: int, owner: Any, calculator: Agent
) -> None:
    with override_settings(MCP_ALLOWED_ORIGINS=[ALLOWED_ORIGIN + "/"]):  # as an operator may
        listed = post(port, {**bearer(owner), "Origin": ALLOWED_ORIGIN})
        other = post(port, {**bearer(owner), "Origin": "https://console.example.com.evil.io"})

    assert listed.status_code == 200
    assert [tool["name"] for tool in sse_result(listed)["tools"]] == ["Calculator"]
    assert other.status_code == 403


@LIVE
def test_the_sdk_client_sends_no_origin_and_is_served(
    port: int, owner: Any, calculator: Agent
) -> None:
    origins: list[str | None] = []
    headers = bearer(owner)  # the ORM, outside the event loop

    async def record(request: httpx2.Request) -> None:
        origins.append(request.headers.get("Origin"))

    async def main() -> list[str]:
        hooks = {"request": [record]}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http,
            Client(streamable_http_client(url(port), http_client=http), cache=None) as client,
        ):
            return [tool.name for tool in (await client.list_tools()).tools]

    assert asyncio.run(main()) == ["Calculator"]
    assert origins
    assert set(origins) == {None}


# ---------------------------------------------------------------- the OAuth challenge


@LIVE
def test_the_401_names_the_resource_metadata_of_the_host_asked(port: int) -> None:
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        response = post(port, {"Host": host})

        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == (
            f'Bearer realm="api", resource_metadata="http://{host}{RESOURCE_METADATA_PATH}"'
        )
        assert isinstance(response.json()["detail"], str)


@LIVE
def test_behind_a_tls_proxy_the_metadata_url_is_https(port: int) -> None:
    with override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
        response = post(port, {"X-Forwarded-Proto": "https"})

    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert f'resource_metadata="https://127.0.0.1:{port}{RESOURCE_METADATA_PATH}"' in challenge


class NoTokens:
    """The SDK's TokenStorage with nothing stored: a client configured for OAuth that has
    not signed in yet."""

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise AssertionError("no authorization server here could have issued a token")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        pass  # registered (agents.access.oauth); the flow stops before it needs it again


@LIVE
def test_the_sdks_oauth_client_follows_the_challenge_to_the_metadata_url(
    port: int, seen: Seen
) -> None:
    metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"])
    auth = OAuthClientProvider(url(port), metadata, NoTokens())

    async def main() -> None:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(url(port), http_client=http), cache=None) as client,
        ):
            await client.list_tools()

    before = seen.paths.copy()
    with pytest.raises(BaseExceptionGroup) as failed:  # the SDK's task groups wrap it
        asyncio.run(main())
    asked = seen.paths - before
    leaf: BaseException = failed.value
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]

    # The client tries the URL the challenge names first (SEP-985), and finds the metadata
    # there: none of the well-known URLs it would build from the server's URL is asked.
    assert asked[RESOURCE_METADATA_PATH] == 1, asked
    assert "/.well-known/oauth-protected-resource" not in asked, asked
    assert asked["/.well-known/oauth-authorization-server"] == 1, asked
    # It registers, then stops where a person would have to allow it (this client has no
    # way to send one to the consent page: tests/agents/access/oauth/test_mcp_sdk_client.py
    # has), having run no tool.
    assert asked["/oauth/register"] == 1, asked
    assert isinstance(leaf, OAuthFlowError), repr(leaf)
    assert "redirect handler" in str(leaf)
    assert not Run.objects.exists()
