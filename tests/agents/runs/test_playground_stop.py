"""The playground's stop (closing the page, or its stream) still ends its run `canceled`,
now that a run is recorded through its event log and its heartbeat (agents.runs.live):
against a live uvicorn serving the project's ASGI app, the fake model holding its stream
open far longer than the test waits. (The MCP call's cancel is tested in
tests/agents/protocols/mcp_server/test_mcp_server.py.)"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest
from django.core.asgi import get_asgi_application
from django.test import Client, override_settings
from django.urls import reverse

from agents.examples import CALCULATOR
from agents.models import Agent, Run, RunEvent
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import fake_model, live_app  # noqa: F401 (the fixture `model`)
from tests.support.backends import openai_server  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def test_closing_the_playground_stream_cancels_its_run(
    model: FakeOpenAI, make_agent: Any, env: Any
) -> None:
    config = {**CALCULATOR["config"], "llmModelId": "openai/gpt-4o-mini"}
    agent: Agent = make_agent("Counter", "tool", config=config)
    model.fallback = Turn(text=["Counting: ", "one, "], pause=0.05, hang=300)
    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(staff)
    browser.get(reverse("admin:index"))  # sets the CSRF cookie
    cookies = "; ".join(f"{k}={v.value}" for k, v in browser.cookies.items())
    body = json.dumps({"version": "latest", "message": "Count slowly."})
    headers = {
        "Cookie": cookies,
        "X-CSRFToken": browser.cookies["csrftoken"].value,
        "Content-Type": "application/json",
        "Referer": "http://127.0.0.1/admin/",
    }

    with override_settings(LLM_OFFLINE=False), live_app(get_asgi_application()) as served:
        page = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        path = reverse("admin:agents_agent_playground_stream", args=[agent.pk])
        page.request("POST", path, body, {**headers, "Host": f"127.0.0.1:{served.port}"})
        response = page.getresponse()
        assert response.status == 200, response.read()
        run_id = response.getheader("X-Run-Id")
        read = b""
        while b"one, " not in read:  # both deltas: the run waits on the model
            chunk = response.read1()
            assert chunk, f"the stream ended: {read!r}"
            read += chunk
        page.close()  # the page is closed

        deadline = time.monotonic() + 60  # a busy machine's margin; returns when it holds
        while Run.objects.get(pk=run_id).status == "in_progress":
            assert time.monotonic() < deadline, "the run was never recorded"
            time.sleep(0.05)

    run = Run.objects.get(pk=run_id)
    assert (run.protocol, run.status) == ("playground", "canceled")
    assert model.disconnected.wait(10), "the model call was not abandoned"
    kinds = [e["type"] for e in RunEvent.objects.filter(run=run).values_list("event", flat=True)]
    assert kinds[:1] == ["response_created"]  # kept, with no terminal event: it was canceled
    assert "response_completed" not in kinds
