"""Which resources are this server's, and what a token bound to one covers
(agents.access.oauth.resources)."""

from __future__ import annotations

import pytest

from agents.access.oauth.resources import covers, is_ours

BASE = "https://agents.example"


@pytest.mark.parametrize(
    ("resource", "ours"),
    [
        (f"{BASE}/v1", True),
        (f"{BASE}/v1/mcp", True),
        (f"{BASE}/v1/mcp/", True),
        (f"{BASE}/v1/a2a", True),
        (f"{BASE}/v1/a2a/helper", True),
        ("HTTPS://AGENTS.EXAMPLE/v1/mcp", True),
        (f"{BASE}/v1/a2a/helper/x", False),
        (f"{BASE}/v1/agents", False),
        (f"{BASE}/v1/mcp?x=1", False),
        (f"{BASE}/v1/mcp#x", False),
        (f"{BASE}/admin", False),
        ("http://agents.example/v1", False),
        ("https://agents.example:8443/v1", False),
        ("https://evil.example/v1", False),
        ("urn:agents", False),
    ],
)
def test_our_resources_are_the_api_mcp_and_a2a_at_our_origin(resource: str, ours: bool) -> None:
    assert is_ours(resource, BASE) is ours


@pytest.mark.parametrize(
    ("resources", "url", "covered"),
    [
        ([f"{BASE}/v1"], f"{BASE}/v1/agents", True),
        ([f"{BASE}/v1/mcp"], f"{BASE}/v1/mcp", True),
        ([f"{BASE}/v1/mcp"], f"{BASE}/v1/agents", False),
        ([f"{BASE}/v1/a2a"], f"{BASE}/v1/a2a/helper", True),
        ([f"{BASE}/v1/a2a"], f"{BASE}/v1/a2a-x", False),
        ([f"{BASE}/v1/a2a/helper"], f"{BASE}/v1/a2a/helper/.well-known/agent-card.json", True),
        ([f"{BASE}/v1/a2a/helper"], f"{BASE}/v1/a2a/other", False),
        ([f"{BASE}/v1"], "https://other.example/v1/agents", False),
        (["HTTPS://Agents.Example/v1/mcp"], f"{BASE}/v1/mcp", True),
        ([], f"{BASE}/v1/agents", True),
        ([], f"{BASE}/admin/", False),
    ],
)
def test_a_token_covers_its_resource_and_below_at_a_segment_boundary(
    resources: list[str], url: str, covered: bool
) -> None:
    assert covers(resources, url) is covered
