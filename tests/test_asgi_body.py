"""Request bodies on the ASGI path (agentbuilder.asgi_body), against a live uvicorn: a
chunked body is read, an oversized one refused before it ends."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.models import Agent, Run
from tests.live import platform_port  # noqa: F401 (the fixture `port`)

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
BODY = {"messages": [{"role": "user", "content": "What is 3 x 5?"}]}


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def post(port: int, path: str, parts: Iterator[bytes], user: Any) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    token, _ = token_encode(user_id=user.pk, environment_id=None)
    sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        # An iterable body without Content-Length: http.client sends it chunked.
        connection.request("POST", path, body=parts, headers=sent, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    return iter([data[i : i + size] for i in range(0, len(data), size)])


@LIVE
def test_a_chunked_body_is_read(port: int, owner: Any, calculator: Agent) -> None:
    path = f"/v1/agents/{calculator.pk}/versions/latest/invoke"
    status, body = post(port, path, pieces(json.dumps(BODY).encode(), 7), owner)
    assert status == 200, body
    assert "15" in body["output"][-1]["content"][0]["text"]
    assert Run.objects.get().messages[0]["content"] == "What is 3 x 5?"


@LIVE
def test_a_chunked_body_over_the_limit_is_413_before_it_ends(
    port: int, owner: Any, calculator: Agent, settings: Any
) -> None:
    settings.API_MAX_BODY_BYTES = 1000
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    head = (
        f"POST /v1/agents/{calculator.pk}/versions/latest/invoke HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
        # 2000 bytes of a body that never ends: the answer must not wait for the rest.
        raw.sendall(head.encode() + b"7d0\r\n" + b" " * 2000 + b"\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
    assert json.loads(rest.partition(b"\r\n\r\n")[2]) == {
        "detail": "Request body is larger than 1000 bytes."
    }
    assert not Run.objects.exists()
