"""Which MCP server URLs the platform may connect to: a guard against server-side request
forgery.

Only http and https, no credentials in the URL, and every address the host resolves to must
be public, unless the operator allowed the host, the address or its network by name
(MCP_ALLOWED_HOSTS) or opened private networks (MCP_ALLOW_PRIVATE_NETWORKS). A URL is checked
when it is registered or referenced, and again before each connection, so a name that
later resolves somewhere private is refused then too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class UrlRefused(ValueError):
    """The URL may not be used for an MCP server; the message says why."""


@dataclass(frozen=True)
class NetworkPolicy:
    allow_private: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()


def policy_from_settings() -> NetworkPolicy:
    hosts: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in settings.MCP_ALLOWED_HOSTS:
        text = str(entry).strip().lower().strip("[]")
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            hosts.add(text.rstrip("."))
    return NetworkPolicy(
        allow_private=bool(settings.MCP_ALLOW_PRIVATE_NETWORKS),
        allowed_hosts=frozenset(hosts),
        allowed_networks=tuple(networks),
    )


def split(url: str) -> tuple[str, int]:
    """(host, port) of an MCP server URL; raises UrlRefused for anything but http(s)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise UrlRefused("only http and https URLs are allowed")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("credentials in the URL are not allowed: send them as headers")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UrlRefused("the URL has no host")
    return host, port or (443 if parts.scheme == "https" else 80)


def check_url(url: str, policy: NetworkPolicy) -> None:
    """Refuse (UrlRefused) a URL whose host resolves to an address the policy forbids.
    Blocks on DNS: for views and services, not the event loop."""
    host, port = split(url)
    if host in policy.allowed_hosts:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UrlRefused(f"the host '{host}' does not resolve") from None
    _check_addresses(host, (info[4][0] for info in infos), policy)


async def check_url_async(url: str, policy: NetworkPolicy) -> None:
    """check_url for the event loop."""
    host, port = split(url)
    if host in policy.allowed_hosts:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UrlRefused(f"the host '{host}' does not resolve") from None
    _check_addresses(host, (info[4][0] for info in infos), policy)


def _check_addresses(host: str, addresses: Iterable[str | int], policy: NetworkPolicy) -> None:
    found = False
    for raw in addresses:
        found = True
        address = ipaddress.ip_address(str(raw).split("%", 1)[0])  # drop an IPv6 zone id
        kind = forbidden_kind(address, policy)
        if kind is not None:
            what = f"'{host}' is" if host == str(address) else f"'{host}' resolves to {address},"
            inner = ", ".join(str(a) for a in embedded_ipv4(address))
            embeds = f" (it embeds {inner})" if inner else ""
            raise UrlRefused(
                f"{what} a {kind} address{embeds}: not allowed for MCP servers unless listed in "
                "MCP_ALLOWED_HOSTS"
            )
    if not found:
        raise UrlRefused(f"the host '{host}' does not resolve")


# IPv6 prefixes that carry an IPv4 address a translator or tunnel will deliver to.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use prefix
# The RFC 6052 prefix lengths a local-use NAT64 prefix can have (its operator picks one),
# the usual /96 first.
_RFC6052_LAYOUTS = (96, 64, 56, 48)


def embedded_ipv4(address: IPAddress) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address stands for: mapped (::ffff:a.b.c.d), translated
    (::ffff:0:a.b.c.d), compatible (::a.b.c.d), NAT64, 6to4 and Teredo (server and client).
    A local-use NAT64 address gives every reading its prefix length allows."""
    if not isinstance(address, ipaddress.IPv6Address):
        return ()
    value = int(address)
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if value >> 32 == 0xFFFF_0000 or (value >> 32 == 0 and value > 1):
        return (ipaddress.IPv4Address(value & 0xFFFF_FFFF),)
    if address in NAT64:
        return (ipaddress.IPv4Address(value & 0xFFFF_FFFF),)
    if address in NAT64_LOCAL:
        return tuple(_rfc6052_ipv4(value, length) for length in _RFC6052_LAYOUTS)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    return ()


def _rfc6052_ipv4(value: int, prefix_length: int) -> ipaddress.IPv4Address:
    bits = [(value >> (127 - i)) & 1 for i in range(128)]
    # The IPv4 address follows the prefix, skipping bits 64-71 (RFC 6052 section 2.2).
    places = [i for i in range(prefix_length, 128) if not 64 <= i < 72][:32]
    return ipaddress.IPv4Address(int("".join(str(bits[i]) for i in places), 2))


def _is_teredo(address: IPAddress) -> bool:
    return isinstance(address, ipaddress.IPv6Address) and address.teredo is not None


def forbidden_kind(address: IPAddress, policy: NetworkPolicy) -> str | None:
    """What kind of non-public address this is, or None when the policy allows it.

    An IPv6 address that embeds IPv4 is judged by what it embeds, since a translator or
    tunnel would deliver there: ::ffff:127.0.0.1 and 64:ff9b::7f00:1 are loopback."""
    if any(address in network for network in policy.allowed_networks):
        return None
    inner = embedded_ipv4(address)
    for ipv4 in inner:
        kind = forbidden_kind(ipv4, policy)
        if kind is not None:
            return kind
    # Translation and 6to4 prefixes mean only what they embed; Teredo and local-use NAT64
    # are judged as themselves too (Python holds them private and reserved).
    if inner and not (address in NAT64_LOCAL or _is_teredo(address)):
        return None
    if address.is_loopback:
        kind = "loopback"
    elif address.is_link_local:
        kind = "link-local"
    elif address.is_multicast:
        kind = "multicast"
    elif address.is_unspecified:
        kind = "unspecified"
    elif address.is_private:
        kind = "private"
    elif not address.is_global or address.is_reserved:
        # Python 3.11 holds IANA's unassigned IPv6 blocks (::/8 among them) global.
        kind = "reserved"
    else:
        return None
    if policy.allow_private and kind in ("loopback", "private"):
        return None
    return kind
