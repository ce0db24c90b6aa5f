"""The A2A JavaScript SDK (`@a2a-js/sdk`, from npm: tests/js/a2a, installed by `make test`'s
`npm ci`) against a live uvicorn on 127.0.0.1, run by Node: tests/js/a2a/client.mjs resolves
the card, sends, sends without blocking and polls, streams, lists page by page, calls the
push-notification config methods and reads the extended card; this test checks what it saw
against the database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.asgi import get_asgi_application

from agents.examples import CALCULATOR
from agents.models import Agent, Run
from agents.permissions import Action, grant
from agents.protocols.a2a.card import EXTENDED_URI
from tests.agents.protocols.a2a.test_sdk_client import base, tok
from tests.factories import UserFactory
from tests.live import ROOT, live_app

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PACKAGE = ROOT / "tests" / "js" / "a2a"
# Node, its start and ~10 calls against a local server: seconds. The bound only stops a hung
# client from hanging the suite; a loaded machine is far inside it.
NODE_SECONDS = 300
TASKS = 5


@pytest.fixture(scope="module")
def port(reseed_after_module: None) -> Iterator[int]:
    with live_app(get_asgi_application()) as served:
        yield served.port


def node_client(url: str, token: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "Node.js is required (the Makefile's test target and .ci/run install it)"
    assert (PACKAGE / "node_modules" / "@a2a-js" / "sdk").is_dir(), (
        "run `npm ci` in tests/js/a2a (make test does)"
    )
    env = {**os.environ, "A2A_URL": url, "A2A_TOKEN": token, "A2A_TASKS": str(TASKS)}
    done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
        [node, "client.mjs"],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=NODE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@LIVE
def test_the_js_sdk_resolves_sends_polls_streams_lists_and_reads_the_extended_card(
    port: int, make_agent: Any
) -> None:
    calculator: Agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    caller = UserFactory(username="js")
    grant(caller, Action.INVOKE, calculator)

    seen = node_client(base(port, "calculator"), tok(caller))

    url = base(port, "calculator")
    # It asked for 1.0's card (A2A-Version: 1.0) and read it as 1.0's protobuf JSON.
    assert seen["card"] == {
        "name": "Calculator",
        "interfaces": [["JSONRPC", "1.0", url], ["JSONRPC", "0.3", url]],
        "bearer": ["httpAuthSecurityScheme", "Bearer"],
        "streaming": True,
        "pushNotifications": False,
        "extendedAgentCard": True,
    }
    assert seen["protocolVersion"] == "1.0"

    assert {s["state"] for s in seen["sent"]} == {"TASK_STATE_COMPLETED"}
    assert all("15" in s["answer"] for s in seen["sent"])
    sent = [s["id"] for s in seen["sent"]]

    polled = seen["polled"]
    assert polled["first"] in ("TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    assert polled["last"] == "TASK_STATE_COMPLETED"
    assert Run.objects.get(pk=polled["id"]).status == "completed"

    stream = seen["stream"]
    assert stream["kinds"][0] == "task"
    assert "artifactUpdate" in stream["kinds"]
    assert stream["last"] == "TASK_STATE_COMPLETED"

    # Newest first, two a page, every task once: the stream's, the polled one, the sends.
    pages = seen["pages"]
    listed = [task_id for page in pages for task_id in page["ids"]]
    assert listed == [stream["id"], polled["id"], *sent[::-1]]
    assert [len(page["ids"]) for page in pages] == [2, 2, 2, 1]
    assert {(page["pageSize"], page["totalSize"]) for page in pages} == {(2, TASKS + 2)}
    assert sum(page["artifacts"] for page in pages) == 0  # includeArtifacts: false

    # The SDK refuses create, get and list itself (the card says pushNotifications: false);
    # delete reaches the server, whose -32003 it reads as the same error.
    assert [p["name"] for p in seen["push"]] == [
        *["PushNotificationNotSupportedError"] * 3,
        "JsonRpcPushNotificationNotSupportedError",
    ]
    assert "webhooks" in seen["push"][3]["message"]

    [extension] = seen["extended"]["extensions"]
    assert extension["uri"] == EXTENDED_URI
    assert extension["params"]["canInvoke"] is True
    assert [v["version"] for v in extension["params"]["versions"]] == [1]

    runs = Run.objects.filter(caller=caller)
    assert runs.count() == TASKS + 2
    assert set(runs.values_list("status", flat=True)) == {"completed"}
    assert set(runs.values_list("protocol", flat=True)) == {"a2a"}
