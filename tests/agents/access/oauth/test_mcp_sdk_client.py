"""The authorization server end to end, as an MCP client that people use meets it: the `mcp`
SDK's own OAuth client (OAuthClientProvider), unmodified, against the platform served live
(agentbuilder.asgi: /v1/mcp, the /oauth endpoints, the admin). Its 401 leads the client to
the metadata; it registers itself; a person logs in on the admin's page and allows it in
headless Chromium; the redirect comes back to a loopback server of the test's; tools are
listed and called with the token; the token is refreshed; tokens for another resource are
refused both ways."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from oauth2_provider.models import AccessToken, Application, RefreshToken
from selenium.webdriver.chrome.webdriver import WebDriver

from agents.examples import CALCULATOR
from agents.models import Run
from tests.browser import PASSWORD, Page, chrome  # noqa: F401 (the fixture `chrome`)
from tests.live import live_app, restore_serialized_rows
from tests.support.mcp_server import LIVE
from tests.support.oauth import issue


@pytest.fixture(scope="module")
def base(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """The platform as `make run` serves it, on loopback; cookies without `Secure` (plain
    http here), so the admin's login holds in the browser."""
    from agentbuilder.asgi import application

    plain_http = override_settings(SESSION_COOKIE_SECURE=False, CSRF_COOKIE_SECURE=False)
    with plain_http, live_app(application) as served:
        yield f"http://127.0.0.1:{served.port}"
    restore_serialized_rows(django_db_blocker)


class Callback:
    """The client's loopback redirect URI (RFC 8252): the query of the first request to it."""

    def __init__(self) -> None:
        self.query: dict[str, str] | None = None
        self.arrived = threading.Event()
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/callback" and not callback.arrived.is_set():
                    callback.query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                    callback.arrived.set()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"You may close this window.")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def result(self) -> AuthorizationCodeResult:
        assert self.arrived.wait(30), "the browser never came back to the client"
        assert self.query is not None
        assert "code" in self.query, self.query
        return AuthorizationCodeResult(
            code=self.query.get("code", ""),
            state=self.query.get("state"),
            iss=self.query.get("iss"),
        )


@pytest.fixture
def callback() -> Iterator[Callback]:
    served = Callback()
    yield served
    served.server.shutdown()
    served.server.server_close()


class Memory:
    """The SDK's TokenStorage, in memory: what a client keeps between sessions."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def consent_in_browser(driver: WebDriver, base: str, url: str, user: Any, tmp: Path) -> None:
    """What the person does: opens the URL, logs in on the admin's page, allows the client."""
    page = Page(driver, base, tmp)
    driver.get(url)
    page.wait_for("#id_username").send_keys(user.get_username())
    page.find("#id_password").send_keys(PASSWORD)
    page.find("#login-form [type=submit]").click()
    page.wait_for("#oauth-client", text="Test Desk asks to act as you")
    assert page.find("#oauth-redirect-host").text.startswith("127.0.0.1:")
    assert "agents:invoke" in page.find("#oauth-scopes").text
    assert page.find("#oauth-resources").text == f"{base}/v1/mcp"
    page.find("#oauth-allow").click()


def provider(base: str, storage: Memory, redirect: Any, callback: Any) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        redirect_uris=[callback.url] if isinstance(callback, Callback) else [callback],
        client_name="Test Desk",
        token_endpoint_auth_method="none",
    )
    handler = callback.result if isinstance(callback, Callback) else None

    async def on_callback() -> AuthorizationCodeResult:
        assert handler is not None
        return await asyncio.to_thread(handler)

    return OAuthClientProvider(f"{base}/v1/mcp", metadata, storage, redirect, on_callback)


async def tools_and_call(base: str, auth: OAuthClientProvider) -> tuple[list[str], str]:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(f"{base}/v1/mcp", http_client=http), cache=None) as client,
    ):
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("Calculator", {"message": "What is 6 times 7?"})
        text = "".join(getattr(block, "text", "") for block in result.content)
        return names, text


@pytest.fixture
def person(owner: Any) -> Any:
    get_user_model().objects.filter(pk=owner.pk).update(is_staff=True)  # the admin's login
    return owner


@LIVE
def test_an_mcp_client_registers_is_allowed_calls_tools_and_refreshes(
    base: str,
    chrome: WebDriver,  # noqa: F811 - the fixture imported above
    callback: Callback,
    person: Any,
    make_agent: Any,
    tmp_path: Path,
) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    storage = Memory()
    opened: list[str] = []

    async def redirect(url: str) -> None:
        opened.append(url)
        await asyncio.to_thread(consent_in_browser, chrome, base, url, person, tmp_path)

    auth = provider(base, storage, redirect, callback)
    names, text = asyncio.run(tools_and_call(base, auth))

    assert names == ["Calculator"]
    assert text
    assert len(opened) == 1  # one consent: discovery, registration and the code flow once
    assert storage.client is not None
    assert storage.client.client_secret is None
    application = Application.objects.get(client_id=storage.client.client_id)
    assert application.name == "Test Desk"
    first = storage.tokens
    assert first is not None
    assert first.refresh_token
    token = AccessToken.objects.get()
    assert token.user_id == person.pk
    assert token.resource == [f"{base}/v1/mcp"]

    # The access token runs out, at the server and in the client's view of it: the next
    # request refreshes it first, with no second consent.
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    auth.context.token_expiry_time = time.time() - 1  # the SDK's record of expires_in
    names, _ = asyncio.run(tools_and_call(base, auth))

    assert names == ["Calculator"]
    assert len(opened) == 1
    second = storage.tokens
    assert second is not None
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1

    # The MCP token is no token for the A2A agents, nor the REST API.
    headers = {"Authorization": f"Bearer {second.access_token}"}
    a2a = httpx2.post(f"{base}/v1/a2a/Calculator", json={}, headers=headers, timeout=30)
    assert a2a.status_code == 401
    assert 'error="invalid_token"' in a2a.headers["WWW-Authenticate"]
    assert httpx2.get(f"{base}/v1/agents", headers=headers, timeout=30).status_code == 401


@LIVE
def test_a_token_for_a2a_is_refused_by_mcp_with_invalid_token(base: str, owner: Any) -> None:
    token = issue(owner, resources=[f"{base}/v1/a2a"])

    response = httpx2.post(
        f"{base}/v1/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=30,
    )

    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/v1/mcp"' in challenge


@LIVE
def test_a_read_only_token_lists_tools_but_may_not_call_them(
    base: str, owner: Any, make_agent: Any
) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    token = issue(owner, resources=[f"{base}/v1/mcp"], scope="agents:read")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}

    def call(method: str, params: dict[str, Any]) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx2.post(f"{base}/v1/mcp", json=body, headers=headers, timeout=30)

    listed = call("tools/list", {})
    called = call("tools/call", {"name": "Calculator", "arguments": {"message": "hi"}})

    assert listed.status_code == 200
    assert called.status_code == 403
    assert 'error="insufficient_scope", scope="agents:invoke"' in called.headers["WWW-Authenticate"]
    assert not Run.objects.exists()


@LIVE
def test_the_sdk_client_refuses_an_answer_whose_state_is_not_its_own(base: str) -> None:
    async def redirect(url: str) -> None:
        pass  # nobody is asked: the answer below is forged

    async def forged() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code="stolen", state="not-the-clients")

    metadata = OAuthClientMetadata(
        redirect_uris=["http://127.0.0.1:9/callback"], token_endpoint_auth_method="none"
    )
    auth = OAuthClientProvider(f"{base}/v1/mcp", metadata, Memory(), redirect, forged)

    async def main() -> None:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(f"{base}/v1/mcp", http_client=http), cache=None) as c,
        ):
            await c.list_tools()

    with pytest.raises(BaseExceptionGroup) as failed:  # the SDK's task groups wrap it
        asyncio.run(main())
    leaf: BaseException = failed.value
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    assert isinstance(leaf, OAuthFlowError)
    assert "State parameter mismatch" in str(leaf)
    assert not AccessToken.objects.exists()  # the stolen code was never sent
