"""Tool listings kept briefly in process memory, so a burst of runs lists a server once.

Keyed by everything that can change the answer (URL, transport, headers: a token may see
other tools), hashed so no secret sits in the key. Only successful listings are kept; the
registry's own tools endpoint always fetches live and refreshes the entry.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict

from django.conf import settings

from agents.mcp_client.client import list_tools
from agents.mcp_client.types import McpEndpoint, RemoteTool

MAX_ENTRIES = 512

_entries: OrderedDict[str, tuple[float, tuple[RemoteTool, ...]]] = OrderedDict()
_lock = threading.Lock()  # runs of several event loops (threads) share the cache


def cache_key(endpoint: McpEndpoint) -> str:
    identity = [endpoint.url, endpoint.transport, sorted(endpoint.headers.items())]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()


def cached(endpoint: McpEndpoint) -> tuple[RemoteTool, ...] | None:
    key = cache_key(endpoint)
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            del _entries[key]
            return None
        return entry[1]


def store(endpoint: McpEndpoint, tools: list[RemoteTool]) -> tuple[RemoteTool, ...]:
    listing = tuple(tools)
    ttl = float(settings.MCP_TOOLS_CACHE_SECONDS)
    if ttl <= 0:
        return listing
    with _lock:
        _entries[cache_key(endpoint)] = (time.monotonic() + ttl, listing)
        _entries.move_to_end(cache_key(endpoint))
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return listing


async def tools_of(endpoint: McpEndpoint, *, live: bool = False) -> tuple[RemoteTool, ...]:
    """The server's tools, from the cache unless `live`. Raises McpError."""
    if not live:
        hit = cached(endpoint)
        if hit is not None:
            return hit
    return store(endpoint, await list_tools(endpoint))


def clear() -> None:
    with _lock:
        _entries.clear()
