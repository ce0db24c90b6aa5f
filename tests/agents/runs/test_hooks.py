"""Run hooks (agents.runs.hooks) see every run, whatever protocol carries it: the proof that
every protocol runs its agents through the one run path (docs/architecture.md#request-path).
A hook that stops a run ends it `failed` with the hook's code, before the event it stopped
on is recorded or sent."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import httpx
import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from agents.examples import CALCULATOR
from agents.models import Agent, Run, RunEvent, RunStatus
from agents.runs.hooks import StopRun
from agents.runs.start import Invocation
from agents.runtime.events import Event, ToolCall
from agents.runtime.failures import FailureCode
from tests.live import platform_port  # noqa: F401 (the fixture `port`)
from tests.support.mcp_server import bearer, connect
from tests.support.native import read_stream

QUESTION = "What is 3 times 5?"
HERE = "tests.agents.runs.test_hooks"


class Seen:
    """Records what every run showed its hooks: event kinds and end, by run id."""

    lock = threading.Lock()  # the detached runner's thread sees runs too
    events: dict[str, list[str]] = defaultdict(list)
    ends: dict[str, str] = {}

    async def on_event(self, invocation: Invocation, event: Event) -> None:
        with self.lock:
            self.events[str(invocation.run_id)].append(type(event).__name__)

    async def on_end(self, invocation: Invocation, status: RunStatus) -> None:
        with self.lock:
            self.ends[str(invocation.run_id)] = status

    @classmethod
    def clear(cls) -> None:
        with cls.lock:
            cls.events.clear()
            cls.ends.clear()


class NoToolCalls:
    """A policy: the run stops where the model asks for a tool."""

    async def on_event(self, invocation: Invocation, event: Event) -> None:
        if isinstance(event, ToolCall):
            raise StopRun(FailureCode.UNSUPPORTED, f"no tool calls here ({event.name})")

    async def on_end(self, invocation: Invocation, status: RunStatus) -> None:
        raise RuntimeError("a hook's end that breaks is logged, not the run's")


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 60  # a busy machine's margin; returns when it holds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_every_protocol_runs_through_the_one_path_that_shows_hooks_each_event(
    port: int, make_agent: Any, owner: Any, settings: Any
) -> None:
    settings.RUN_HOOKS = [f"{HERE}.Seen"]
    Seen.clear()
    agent: Agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    base = f"http://127.0.0.1:{port}/v1"
    version = f"{base}/agents/{agent.pk}/versions/latest"
    chat = {"messages": [{"role": "user", "content": QUESTION}]}
    text = [{"type": "text", "text": QUESTION}]
    process = {"input": [{"type": "message", "role": "user", "content": text}]}
    a2a_message = {
        "kind": "message",
        "messageId": "m-1",
        "role": "user",
        "parts": [{"kind": "text", "text": QUESTION}],
    }
    protocols: dict[str, str] = {}  # protocol → run id
    with httpx.Client(headers=bearer(owner), timeout=60) as http:
        for name, url, body in [
            ("invoke", f"{version}/invoke", chat),
            ("invoke-stream", f"{version}/invoke-stream", chat),
            ("respond", f"{version}/respond", chat),
            ("process", f"{version}/process", process),
            ("chat", f"{version}/chat/completions", {**chat, "stream": True}),
            ("openai", f"{base}/openai/chat/completions", {**chat, "model": "Calculator"}),
        ]:
            answer = http.post(url, json=body)
            assert answer.status_code == 200, (name, answer.text)
            protocols[name] = answer.headers["X-Run-Id"]
        for name, method, params in [
            ("a2a-send", "message/send", {"message": a2a_message}),
            ("a2a-stream", "message/stream", {"message": a2a_message}),
            (
                "a2a-non-blocking",
                "message/send",
                {"message": a2a_message, "configuration": {"blocking": False}},
            ),
        ]:
            rpc = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = http.post(f"{base}/a2a/Calculator", json=rpc)
            assert answer.status_code == 200, (name, answer.text)
            protocols[name] = answer.headers["X-Run-Id"]

    headers = bearer(owner)

    async def mcp_call() -> str:
        async with connect(port, headers, "handshake") as session:
            result = await session.call_tool("Calculator", {"message": QUESTION})
            return str(result.meta["agentbuilder/runId"])  # type: ignore[index]

    protocols["mcp"] = asyncio.run(mcp_call())
    protocols["playground"] = _playground_turn(port, agent)

    _wait_for(lambda: set(protocols.values()) <= set(Seen.ends), "a run's end was not seen")
    every_run = {str(pk) for pk in Run.objects.values_list("pk", flat=True)}
    assert every_run == set(protocols.values()), "each call was one run, and the hook saw it"
    for name, run_id in protocols.items():
        kinds = Seen.events[run_id]
        assert kinds[0] == "ResponseCreated", name
        assert kinds[-1] == "ResponseCompleted", (name, kinds)
        assert {"ToolCall", "ToolResult"} <= set(kinds), (name, kinds)
        assert Seen.ends[run_id] == RunStatus.COMPLETED, name
        stored = RunEvent.objects.filter(run_id=run_id).count()
        assert stored == len(kinds), (name, "the hook saw what was recorded")


def _playground_turn(port: int, agent: Agent) -> str:
    staff = type(
        agent.created_by
    ).objects.create_superuser(  # type: ignore[union-attr]
        username=f"staff-{uuid.uuid4().hex[:6]}", password=None, email=""
    )
    browser = Client()
    browser.force_login(staff)
    browser.get(reverse("admin:index"))  # sets the CSRF cookie
    cookies = "; ".join(f"{k}={v.value}" for k, v in browser.cookies.items())
    answer = httpx.post(
        f"http://127.0.0.1:{port}"
        + reverse("admin:agents_agent_playground_stream", args=[agent.pk]),
        content=json.dumps({"version": "latest", "message": QUESTION}),
        headers={
            "Cookie": cookies,
            "X-CSRFToken": browser.cookies["csrftoken"].value,
            "Content-Type": "application/json",
            "Referer": f"http://127.0.0.1:{port}/admin/",
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return answer.headers["X-Run-Id"]


@pytest.mark.django_db
def test_a_hook_that_stops_the_run_fails_it_before_the_event_is_kept_or_sent(
    make_agent: Any, owner_client: APIClient, settings: Any, caplog: Any
) -> None:
    settings.RUN_HOOKS = [f"{HERE}.NoToolCalls"]
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    url = f"/v1/agents/{agent.pk}/versions/latest"
    chat = {"messages": [{"role": "user", "content": QUESTION}]}

    answer = owner_client.post(f"{url}/invoke", chat, format="json")

    assert answer.status_code == 502, answer.content
    assert answer.json() == {"detail": "unsupported: no tool calls here (multiply)"}
    run = Run.objects.get(pk=answer.headers["X-Run-Id"])
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "unsupported")
    kinds = [e["type"] for e in RunEvent.objects.filter(run=run).values_list("event", flat=True)]
    assert kinds == ["response_created", "response_failed"], "the stopped call never ran"
    assert "broke on its end" in caplog.text

    streamed = owner_client.post(f"{url}/invoke-stream", chat, format="json")
    lines = read_stream(streamed)  # checked against docs/api.md#invoke-stream
    assert [line["type"] for line in lines] == ["response.created", "response.failed"]
    assert "unsupported" in json.dumps(lines[-1])
