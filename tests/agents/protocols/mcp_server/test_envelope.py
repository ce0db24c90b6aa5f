"""What /v1/mcp refuses before the SDK reads a request (agents.protocols.mcp_server.envelope),
against a live uvicorn serving agentbuilder.asgi:application, in raw JSON-RPC:

- fields the server echoes (the request's `id`, `params._meta.progressToken`) are bounded,
  so a large one costs the server no more than it cost the client: the answer's bytes are
  counted, never timed;
- text PostgreSQL cannot store (a NUL) anywhere in the params is -32602 naming the field,
  as the REST API answers 400 and A2A -32602, with no traceback logged and no run opened.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import pytest

from agents.examples import CALCULATOR
from agents.models import Agent, Run
from agents.protocols.mcp_server.envelope import ECHOED_MAX_CHARS
from tests.factories import CONFIGS
from tests.live import platform_port  # noqa: F401 (the fixture `port`)
from tests.support.mcp_server import LIVE, bearer, url

ACCEPT = {"Accept": "application/json, text/event-stream"}
BIG = 100_000
# An answer that refuses: the error and its (bounded) id, a few hundred bytes at most.
SMALL_ANSWER = 1_000


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def call(
    port: int, user: Any, name: str, arguments: dict[str, Any], **envelope: Any
) -> httpx2.Response:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if "token" in envelope:
        params["_meta"] = {"progressToken": envelope.pop("token")}
    body = {"jsonrpc": "2.0", "id": envelope.pop("id", 1), "method": "tools/call", "params": params}
    return httpx2.post(url(port), json=body, headers={**ACCEPT, **bearer(user)}, timeout=60)


def error_of(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"] == "application/json"
    answer: dict[str, Any] = response.json()
    assert answer["jsonrpc"] == "2.0"
    return answer


def sse_messages(response: httpx2.Response) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


# ---------------------------------------------------------------- echoed fields


@LIVE
@pytest.mark.parametrize(
    "token", ["t" * BIG, 2**60, 1.5, True], ids=["long", "huge", "float", "bool"]
)
def test_a_progress_token_past_the_bound_is_refused_with_a_small_answer(
    port: int, owner: Any, calculator: Agent, token: Any
) -> None:
    response = call(port, owner, "Calculator", {"message": "What is 3 x 5?"}, token=token, id=7)

    # Before the bound, a 100 KB token came back in every progress notification (20.8 MB).
    assert len(response.content) < SMALL_ANSWER
    answer = error_of(response)
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32602
    assert "params._meta.progressToken" in answer["error"]["message"]
    assert not Run.objects.exists()


@LIVE
@pytest.mark.parametrize("request_id", ["i" * BIG, -(2**60)], ids=["long", "huge"])
def test_a_request_id_past_the_bound_is_refused_without_echoing_it(
    port: int, owner: Any, calculator: Agent, request_id: Any
) -> None:
    response = call(port, owner, "Calculator", {"message": "What is 3 x 5?"}, id=request_id)

    assert len(response.content) < SMALL_ANSWER
    answer = error_of(response)
    assert answer["id"] is None  # JSON-RPC's id of a request whose id cannot be read
    assert answer["error"]["code"] == -32600
    assert "id must be" in answer["error"]["message"]
    assert not Run.objects.exists()


@LIVE
def test_a_progress_token_at_the_bound_is_echoed_in_each_notification(
    port: int, owner: Any, calculator: Agent
) -> None:
    token = "t" * ECHOED_MAX_CHARS

    response = call(port, owner, "Calculator", {"message": "What is 3 x 5?"}, token=token, id=8)

    assert response.status_code == 200, response.text
    messages = sse_messages(response)
    notifications = [m for m in messages if m.get("method") == "notifications/progress"]
    assert notifications  # the offline model streams its answer in pieces
    assert {m["params"]["progressToken"] for m in notifications} == {token}
    (result,) = [m for m in messages if "result" in m]
    assert result["id"] == 8
    assert not result["result"].get("isError")
    # Each notification costs the token once more: bounded by ECHOED_MAX_CHARS, the answer
    # stays within a few hundred bytes of overhead per streamed piece.
    assert len(response.content) < len(notifications) * (ECHOED_MAX_CHARS + 400) + 2_000


# ---------------------------------------------------------------- text PostgreSQL refuses


def assert_refused_at(response: httpx2.Response, field: str, request_id: int) -> None:
    answer = error_of(response)
    assert answer["id"] == request_id
    assert answer["error"]["code"] == -32602
    message = answer["error"]["message"]
    assert f"{field}: text must not contain NUL characters" in message, message
    assert not Run.objects.exists()


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not logged, [r.getMessage() for r in logged]


@LIVE
def test_a_nul_in_the_tool_name_is_invalid_params_naming_it(
    port: int, owner: Any, calculator: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        response = call(port, owner, "Calcu\x00lator", {"message": "What is 3 x 5?"}, id=3)

    assert_refused_at(response, "params.name", 3)
    no_traceback(caplog)


@LIVE
def test_a_nul_in_the_thread_id_is_invalid_params_naming_it(
    port: int, owner: Any, calculator: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        response = call(
            port, owner, "Calculator", {"message": "What is 3 x 5?", "threadId": "t\x00"}, id=4
        )

    assert_refused_at(response, "params.arguments.threadId", 4)
    no_traceback(caplog)


@LIVE
def test_a_nul_in_a_task_agents_input_is_invalid_params_naming_it(
    port: int, owner: Any, make_agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    make_agent("summariser", "task", config=CONFIGS["task"])

    with caplog.at_level(logging.INFO):
        nested = call(port, owner, "summariser", {"text": "hi", "audience": "a\x00b"}, id=5)
        in_key = call(port, owner, "summariser", {"text": "hi", "k\x00": "v"}, id=6)

    assert_refused_at(nested, "params.arguments.audience", 5)
    assert_refused_at(in_key, "params.arguments", 6)  # a key is located at its object
    no_traceback(caplog)
