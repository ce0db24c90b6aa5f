"""Tests reach loopback only: a guard on name resolution and on connecting, for the whole
test process (tests/conftest.py turns it on for the session). A public address may appear
in a test as data (an address guard's verdict, a stored URL); if anything ever tries to
reach one, the attempt fails here instead of leaving the machine."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

NAMES = (None, "localhost", "testserver")  # testserver: Django's test client's host


def is_loopback(host: Any) -> bool:
    if host in NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def is_address(host: Any) -> bool:
    """An IP literal: resolving it asks no name server (the MCP address guard does)."""
    try:
        ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return True


@contextmanager
def loopback_only() -> Iterator[None]:
    resolve, connect = socket.getaddrinfo, socket.socket.connect

    def guarded_resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not (is_loopback(host) or is_address(host)):
            raise socket.gaierror(socket.EAI_NONAME, "tests resolve loopback names only")
        return resolve(host, *args, **kwargs)

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
            raise ConnectionRefusedError(f"tests connect to loopback only, not {address[0]}")
        connect(sock, address)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", guarded_resolve)
        patch.setattr(socket.socket, "connect", guarded_connect)
        yield
