"""What a token is for: the protected resources this server offers (RFC 8707's `resource`,
RFC 9728's metadata) and the scopes it grants.

A token is bound to resources, each `<base>/v1` (the whole API), `<base>/v1/mcp` or
`<base>/v1/a2a[/<name>]`, `<base>` being this server's origin as the request names it. A
token bound to R is good on R and below it at a path-segment boundary (`/v1/a2a` covers
`/v1/a2a/helper`, never `/v1/a2a-x`). A token requested with no `resource` is bound to
`<base>/v1`, which the consent page says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from django.http import HttpRequest

API = "/v1"
MCP = "/v1/mcp"
A2A = "/v1/a2a"
METADATA_PREFIX = "/.well-known/oauth-protected-resource"
# The resources with a metadata document of their own: their 401s name it.
DOCUMENTED = (MCP, A2A)

READ = "agents:read"
INVOKE = "agents:invoke"
# Product text: the consent page shows these.
SCOPES = {
    READ: "See the agents you may use, their cards and your own runs.",
    INVOKE: "Run agents as you: call them over MCP and A2A, and make changes over the API "
    "that you may make.",
}

_RESOURCE_PATH = re.compile(r"^/v1(/mcp|/a2a(/[^/?#]+)?)?$")


def base_url(request: HttpRequest) -> str:
    """This server's origin as the request names it (Host, and the scheme behind a proxy)."""
    return request.build_absolute_uri("/").rstrip("/")


def resource_of(request: HttpRequest, path: str) -> str:
    return base_url(request) + path


def is_ours(resource: str, base: str) -> bool:
    """Whether `resource` is one of this server's resources (else RFC 8707's invalid_target)."""
    parts = urlsplit(resource)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    if origin != base.lower() or parts.query or parts.fragment or "#" in resource:
        return False
    return bool(_RESOURCE_PATH.match(parts.path.rstrip("/") or "/"))


def covers(resources: Iterable[str], url: str) -> bool:
    """Whether a token bound to `resources` may call `url` (no resources: the whole API)."""
    target = urlsplit(url)
    target_path = target.path.rstrip("/") + "/"
    bound = list(resources)
    if not bound:
        return target_path.startswith(API + "/")
    for resource in bound:
        parts = urlsplit(resource)
        origin = (parts.scheme.lower(), parts.netloc.lower())
        same_origin = origin == (target.scheme.lower(), target.netloc.lower())
        if same_origin and target_path.startswith(parts.path.rstrip("/") + "/"):
            return True
    return False


def documented_resource(path: str) -> str | None:
    """The documented resource (MCP or A2A) a request path belongs to, for its 401's
    `resource_metadata`."""
    for resource in DOCUMENTED:
        if path == resource or path.startswith(resource + "/"):
            return resource
    return None


def metadata_url(request: HttpRequest, resource_path: str) -> str:
    """Where RFC 9728's metadata of the resource at `resource_path` is."""
    return base_url(request) + METADATA_PREFIX + resource_path


def scope_needed(method: str, path: str) -> str | None:
    """The scope an HTTP request needs: reading is READ, anything else INVOKE. None for MCP,
    where every call is a POST: its endpoint checks the JSON-RPC method (tools_scope)."""
    if documented_resource(path) == MCP:
        return None
    return READ if method in ("GET", "HEAD", "OPTIONS") else INVOKE


def mcp_scope_needed(rpc_method: object) -> str:
    """`tools/call` runs an agent; everything else (list, ping, initialize) reads."""
    return INVOKE if rpc_method == "tools/call" else READ
