"""The A2A JavaScript SDK (`@a2a-js/sdk`, from npm: tests/js/a2a, installed by `make test`'s
`npm ci`) against a live uvicorn on 127.0.0.1, run by Node: tests/js/a2a/client.mjs resolves
the card, sends, subscribes from a second client to a task another one started, sends twenty
times without blocking and polls each to its end, streams, lists page by page, calls the
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
from django.test import override_settings

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, Run
from agents.protocols.a2a.card import EXTENDED_URI
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import ROOT, django_port  # noqa: F401 (the fixture `port`)
from tests.support.a2a import base, tok
from tests.support.backends import MODELS, openai_server  # noqa: F401

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PACKAGE = ROOT / "tests" / "js" / "a2a"
# Node, its start and ~40 calls against a local server, one slow answer followed: under a
# minute. The bound only stops a hung client from hanging the suite; a loaded machine is far
# inside it (the script's own waits are bounded at 240 s).
NODE_SECONDS = 600
TASKS = 5
POLLED = 20
# The slow agent's answer: twenty deltas a quarter second apart, five seconds in all. Its
# task must still run when the second client subscribes, which the script does right after
# the send has answered (a card fetch and a request): a fraction of a second even on a
# loaded machine.
SLOW = Turn(text=[f"{n}, " for n in range(1, 21)], pause=0.25)


@pytest.fixture
def slow_model(openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:  # noqa: F811
    """The fake OpenAI model, answering slowly; with LLM_OFFLINE off, so that an agent on an
    OpenAI model id reaches it (the Calculator names the offline model's id instead)."""
    openai_server.reset()
    openai_server.fallback = SLOW
    with override_settings(LLM_OFFLINE=False):
        yield openai_server
    openai_server.reset()


def node_client(url: str, slow_url: str, token: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "Node.js is required (the Makefile's test target and .ci/run install it)"
    assert (PACKAGE / "node_modules" / "@a2a-js" / "sdk").is_dir(), (
        "run `npm ci` in tests/js/a2a (make test does)"
    )
    env = {
        **os.environ,
        "A2A_URL": url,
        "A2A_SLOW_URL": slow_url,
        "A2A_TOKEN": token,
        "A2A_TASKS": str(TASKS),
        "A2A_POLLED": str(POLLED),
    }
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
def test_the_js_sdk_resolves_sends_subscribes_polls_streams_lists_and_reads_the_extended_card(
    port: int, make_agent: Any, slow_model: FakeOpenAI
) -> None:
    # The offline model answers the Calculator (named by its id: LLM_OFFLINE is off for the
    # slow agent's sake), the fake OpenAI model the slow agent.
    offline = {**CALCULATOR["config"], "llmModelId": LOCAL_MODEL}
    calculator: Agent = make_agent("Calculator", "tool", config=offline)
    slow: Agent = make_agent("Slow", "tool", config={**offline, "llmModelId": MODELS["openai"]})
    caller: Any = UserFactory(username="js")  # the factory builds a User
    grant(caller, Action.INVOKE, calculator)
    grant(caller, Action.INVOKE, slow)

    seen = node_client(base(port, "calculator"), base(port, "slow"), tok(caller))

    url = base(port, "calculator")
    # It asked for 1.0's card (A2A-Version: 1.0) and read it as 1.0's protobuf JSON.
    assert seen["card"] == {
        "name": "Calculator",
        "interfaces": [["JSONRPC", "1.0", url], ["JSONRPC", "0.3", url]],
        "bearer": ["httpAuthSecurityScheme", "Bearer"],
        "streaming": True,
        "pushNotifications": True,
        "extendedAgentCard": True,
    }
    assert seen["protocolVersion"] == "1.0"

    assert {s["state"] for s in seen["sent"]} == {"TASK_STATE_COMPLETED"}
    assert all("15" in s["answer"] for s in seen["sent"])
    sent = [s["id"] for s in seen["sent"]]

    # Subscribed to from a second client while it ran, read to its end: the text assembled
    # from the opening task and the updates is the answer the run stored.
    subscribed = seen["subscribed"]
    slow_run = Run.objects.get(pk=subscribed["id"])
    # A background run: submitted when sent, working once the server's runner takes it.
    assert subscribed["first"] == "TASK_STATE_SUBMITTED"
    assert subscribed["kinds"][0] == "task"
    assert subscribed["opening"]["id"] == subscribed["id"]
    assert subscribed["opening"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert "artifactUpdate" in subscribed["kinds"]
    assert subscribed["last"] == "TASK_STATE_COMPLETED"
    assert slow_run.status == "completed"
    assert subscribed["text"] == slow_run.output == "".join(SLOW.text)
    assert slow_run.caller == caller

    # Twenty sent at once without blocking, each polled with getTask to its end.
    polled = seen["polled"]
    assert len({p["id"] for p in polled}) == POLLED
    assert {p["first"] for p in polled} == {"TASK_STATE_SUBMITTED"}  # background runs, queued
    assert [p["last"] for p in polled] == ["TASK_STATE_COMPLETED"] * POLLED
    assert all("15" in p["answer"] for p in polled)
    polled_runs = Run.objects.filter(pk__in=[p["id"] for p in polled])
    assert sorted(polled_runs.values_list("status", flat=True)) == ["completed"] * POLLED

    stream = seen["stream"]
    assert stream["kinds"][0] == "task"
    assert "artifactUpdate" in stream["kinds"]
    assert stream["last"] == "TASK_STATE_COMPLETED"

    # Newest first, two a page, every task of this agent once: the stream's, the polled ones
    # (started together: in any order among themselves), the sends.
    pages = seen["pages"]
    listed = [task_id for page in pages for task_id in page["ids"]]
    assert listed[0] == stream["id"]
    assert sorted(listed[1 : 1 + POLLED]) == sorted(p["id"] for p in polled)
    assert listed[1 + POLLED :] == sent[::-1]
    total = TASKS + POLLED + 1
    assert [len(page["ids"]) for page in pages] == [2] * (total // 2) + [1] * (total % 2)
    assert {(page["pageSize"], page["totalSize"]) for page in pages} == {(2, total)}
    assert sum(page["artifacts"] for page in pages) == 0  # includeArtifacts: false

    # The card says pushNotifications: true, so the SDK sends the four methods; the task has
    # ended, so a config for it is refused and none is found, listed or deleted.
    push = seen["push"]
    assert "no updates left to push" in push["create"]["message"]
    assert "no push notification config 'c'" in push["get"]["message"]
    assert push["listed"] == 0
    assert "no push notification config 'c'" in push["delete"]["message"]

    [extension] = seen["extended"]["extensions"]
    assert extension["uri"] == EXTENDED_URI
    assert extension["params"]["canInvoke"] is True
    assert [v["version"] for v in extension["params"]["versions"]] == [1]

    runs = Run.objects.filter(caller=caller)
    assert runs.count() == TASKS + POLLED + 2  # and the slow agent's one
    assert set(runs.values_list("status", flat=True)) == {"completed"}
    assert set(runs.values_list("protocol", flat=True)) == {"a2a"}
