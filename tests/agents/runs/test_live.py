"""A cancel reaches a live run (agents.runs.live.run_cancel) through POST
/v1/runs/{id}/cancel: against a live uvicorn serving the project's ASGI app, a native
stream whose model holds its answer open far longer than the test waits ends at once with
a `canceled` failure line, and the run is recorded `canceled`. (A cancel from another
process, polled through the run's row, is tested with A2A's tasks/cancel in
tests/agents/protocols/a2a.)"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from django.core.asgi import get_asgi_application
from django.test import override_settings

from agents.examples import CALCULATOR
from agents.models import Agent, Run, RunEvent
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import fake_model, live_app  # noqa: F401 (the fixture `model`)
from tests.support.backends import openai_server  # noqa: F401
from tests.support.mcp_server import bearer

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def test_a_cancel_asked_through_the_api_ends_a_live_stream_canceled(
    model: FakeOpenAI, make_agent: Any, owner: Any
) -> None:
    config = {**CALCULATOR["config"], "llmModelId": "openai/gpt-4o-mini"}
    agent: Agent = make_agent("Counter", "tool", config=config)
    model.fallback = Turn(text=["Counting: ", "one, "], pause=0.05, hang=300)
    headers = bearer(owner)
    ask = {"messages": [{"role": "user", "content": "Count slowly."}]}

    with (
        override_settings(LLM_OFFLINE=False),
        live_app(get_asgi_application()) as served,
        httpx.Client(base_url=f"http://127.0.0.1:{served.port}/v1", headers=headers) as http,
    ):
        path = f"/agents/{agent.pk}/versions/latest/invoke-stream"
        with http.stream("POST", path, json=ask, timeout=60) as stream:
            assert stream.status_code == 200
            run_id = stream.headers["X-Run-Id"]
            lines = stream.iter_lines()
            read = []
            while "one, " not in json.dumps(read):  # both deltas: the run waits on the model
                read.append(json.loads(next(lines)))

            asked = http.post(f"/runs/{run_id}/cancel", timeout=60)

            assert asked.status_code == 202, asked.text
            rest = [json.loads(line) for line in lines]  # the stream ends, not the model
        deadline = time.monotonic() + 60  # a busy machine's margin; returns when it holds
        while Run.objects.get(pk=run_id).status == "in_progress":
            assert time.monotonic() < deadline, "the run was never recorded"
            time.sleep(0.05)
        again = http.post(f"/runs/{run_id}/cancel", timeout=60)

    assert [line["type"] for line in rest] == ["response.failed"]
    assert "canceled" in json.dumps(rest[-1])
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.protocol) == ("canceled", "native")
    assert run.cancel_requested_at is not None
    assert again.status_code == 409  # ended: nothing left to cancel
    assert model.disconnected.wait(10), "the model call was not abandoned"
    kinds = [e["type"] for e in RunEvent.objects.filter(run=run).values_list("event", flat=True)]
    assert "response_completed" not in kinds
