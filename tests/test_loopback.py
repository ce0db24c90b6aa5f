"""The session-wide guard of tests/loopback.py is on: a public name does not resolve and a
public address is refused before any packet leaves; loopback works."""

from __future__ import annotations

import socket

import pytest

PUBLIC = "93.184.215.14"  # an address the MCP guard tests name as data


def test_the_guard_is_installed() -> None:
    # Checked first: without the guard the tests below would try the network.
    assert socket.socket.connect.__name__ == "guarded_connect"
    assert socket.getaddrinfo.__name__ == "guarded_resolve"


def test_a_public_address_is_refused_and_a_public_name_does_not_resolve() -> None:
    assert socket.socket.connect.__name__ == "guarded_connect"
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError, match="loopback only"):
        sock.connect((PUBLIC, 443))
    with pytest.raises(socket.gaierror, match="loopback names only"):
        socket.getaddrinfo("example.com", 443)


def test_loopback_still_connects() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=2):
            pass
