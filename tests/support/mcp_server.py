"""Our MCP server from the client's side: its URL on a live server, a bearer header, and a
connected session of the official SDK in either era of the protocol."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from agents.access.tokens import token_encode

# Live tests are transactional: the server's threads only see committed rows;
# serialized_rollback restores the catalogs and the `default` environment the flush erases.
LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1/mcp"


def bearer(user: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_encode(user_id=user.pk, environment_id=None)[0]}"}


@asynccontextmanager
async def connect(port: int, headers: dict[str, str], era: str) -> AsyncIterator[Any]:
    """A connected SDK client: a ClientSession after `initialize`, or the default Client."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        if era == "handshake":
            async with (
                streamable_http_client(url(port), http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
                yield session
        else:
            transport = streamable_http_client(url(port), http_client=http)
            async with Client(transport, cache=None) as client:
                # The probe found the 2026 protocol: no fall-back to the handshake.
                assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
                yield client
