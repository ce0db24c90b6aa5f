"""The MCP address guard against IPv6 forms that embed an IPv4 address.

Every URL here is a literal address, so checking it resolves nothing and connects nowhere.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.mcp_client.ssrf import (
    NetworkPolicy,
    UrlRefused,
    check_url,
    embedded_ipv4,
    policy_from_settings,
)
from agents.models import McpServer

EMBEDDED_LOOPBACK = [
    "http://[::127.0.0.1]/mcp",  # IPv4-compatible
    "http://[::ffff:127.0.0.1]/mcp",  # IPv4-mapped
    "http://[::ffff:0:127.0.0.1]/mcp",  # IPv4-translated (SIIT)
    "http://[64:ff9b::7f00:1]/mcp",  # NAT64, well-known prefix
    "http://[64:ff9b:1::7f00:1]/mcp",  # NAT64, local-use prefix as a /96
    "http://[2002:7f00:1::]/mcp",  # 6to4
]


@pytest.mark.parametrize("url", EMBEDDED_LOOPBACK)
def test_ipv6_forms_of_loopback_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused, match=r"loopback address \(it embeds 127\.0\.0\.1[,)]"):
        check_url(url, NetworkPolicy())


def test_every_reading_of_a_local_use_nat64_address_is_judged() -> None:
    # 127.0.0.1 under 64:ff9b:1::/48 used as a /48 prefix; as a /96 it would be 0.0.0.0.
    address = ipaddress.IPv6Address("64:ff9b:1:7f00:0:100::")
    assert ipaddress.IPv4Address("127.0.0.1") in embedded_ipv4(address)
    with pytest.raises(UrlRefused, match="not allowed"):
        check_url(f"http://[{address}]/mcp", NetworkPolicy())


def test_teredo_is_judged_by_the_client_it_embeds() -> None:
    # Server 65.54.227.120 (public), client 10.0.0.1 hidden by Teredo's bit inversion.
    teredo = ipaddress.IPv6Address("2001:0:4136:e378:8000:63bf:f5ff:fffe")
    assert embedded_ipv4(teredo)[1] == ipaddress.IPv4Address("10.0.0.1")
    with pytest.raises(UrlRefused, match="private address"):
        check_url(f"http://[{teredo}]/mcp", NetworkPolicy())


def test_embedded_private_and_link_local_addresses_are_refused() -> None:
    with pytest.raises(UrlRefused, match="private address"):
        check_url("http://[64:ff9b::10.1.2.3]/mcp", NetworkPolicy())
    with pytest.raises(UrlRefused, match="link-local address"):
        check_url("http://[2002:a9fe:a9fe::]/latest/meta-data", NetworkPolicy())


def test_reserved_ipv6_blocks_are_refused() -> None:
    # ::/8 beyond the embedded forms: Python 3.11 calls it global.
    with pytest.raises(UrlRefused, match="reserved address"):
        check_url("http://[::1:0:0:1]/mcp", NetworkPolicy())


def test_a_public_ipv4_behind_nat64_or_6to4_passes() -> None:
    check_url("http://[64:ff9b::93.184.215.14]/mcp", NetworkPolicy())
    check_url("http://[2002:5db8:d70e::]/mcp", NetworkPolicy())


def test_an_allowed_ipv4_network_allows_its_ipv6_forms() -> None:
    policy = NetworkPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    check_url("http://[::ffff:127.0.0.1]/mcp", policy)
    check_url("http://[64:ff9b::7f00:1]/mcp", policy)


@pytest.mark.django_db
def test_registering_a_nat64_loopback_url_is_a_400_at_the_url(owner_client: APIClient) -> None:
    response = owner_client.post(
        "/v1/mcp-servers", {"name": "calc", "url": "http://[64:ff9b::7f00:1]:8000/mcp"}, "json"
    )
    assert response.status_code == 400, response.json()
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "url"]
    assert "a loopback address (it embeds 127.0.0.1)" in error["msg"]
    assert not McpServer.objects.exists()


def test_settings_open_private_networks_but_never_link_local(settings: Any) -> None:
    settings.MCP_ALLOW_PRIVATE_NETWORKS = True
    for url in ("http://127.0.0.1/mcp", "http://10.0.0.1/mcp", "http://localhost/mcp"):
        check_url(url, policy_from_settings())
    with pytest.raises(UrlRefused, match="link-local"):
        check_url("http://169.254.169.254/", policy_from_settings())
    settings.MCP_ALLOWED_HOSTS = ["169.254.0.0/16"]
    check_url("http://169.254.169.254/", policy_from_settings())


def test_a_public_address_passes_the_guard() -> None:
    check_url("https://93.184.215.14/mcp", NetworkPolicy())
