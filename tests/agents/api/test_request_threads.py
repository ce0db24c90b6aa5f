"""Many streams open at once, against the deployed ASGI app (agentbuilder.asgi) on a real
uvicorn: their sync work shares REQUEST_THREADS threads (agentbuilder.request_threads)
instead of holding one thread per stream, and each stream still completes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import override_settings

from agentbuilder.asgi import application
from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.models import Run
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import live_app
from tests.support.backends import Backend
from tests.support.native import COMPLETED, DELTA

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

STREAMS = 24
HOLD = 1.5  # seconds the model keeps each stream open after its text


def test_open_streams_share_request_threads(
    openai_server: FakeOpenAI, make_agent: Any, owner: Any
) -> None:
    openai_server.reset()
    openai_server.fallback = Turn(text=["Counting: ", "one."], hang=HOLD)
    backend = Backend("openai", openai_server)
    agent = make_agent("Calculator", "tool", config=backend.config(CALCULATOR["config"]))
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    path = f"/v1/agents/{agent.pk}/versions/latest/invoke-stream"
    before = {thread.ident for thread in threading.enumerate()}
    peak: list[int] = []
    done = threading.Event()

    def watch() -> None:
        # The threads that run requests' sync work, sampled while the streams are open:
        # RequestThreads' own (request-N, started by this or an earlier test of the
        # process), and any new ThreadPoolExecutor-N_0, the name of the thread asgiref
        # makes per request context without them. (The fake model's server has a thread
        # per connection too: not counted.)
        while not done.is_set():
            threads = threading.enumerate()
            peak.append(
                sum(t.name.startswith("request-") for t in threads)
                + sum(
                    t.ident not in before and t.name.startswith("ThreadPoolExecutor-")
                    for t in threads
                )
            )
            time.sleep(0.05)

    async def stream(client: httpx.AsyncClient) -> list[dict[str, Any]]:
        async with client.stream(
            "POST",
            path,
            json={"messages": [{"role": "user", "content": "Count."}]},
            headers={"Authorization": f"Bearer {token}"},
        ) as response:
            assert response.status_code == 200
            return [json.loads(line) async for line in response.aiter_lines() if line]

    async def burst(port: int) -> list[list[dict[str, Any]]]:
        limits = httpx.Limits(max_connections=STREAMS)
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
            return await asyncio.gather(*(stream(client) for _ in range(STREAMS)))

    with override_settings(LLM_OFFLINE=False), live_app(application) as served:
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            answers = asyncio.run(burst(served.port))
        finally:
            done.set()
            watcher.join()
    openai_server.reset()

    assert len(answers) == STREAMS
    for lines in answers:
        assert lines[-1]["type"] == COMPLETED
        text = "".join(line["delta"] for line in lines if line["type"] == DELTA)
        assert text == "Counting: one."
    assert Run.objects.filter(agent=agent, status="completed").count() == STREAMS
    # Every stream was open at once for HOLD seconds; without the shared threads each held
    # one (asgiref's executor per request context) for all that time.
    assert 0 < max(peak) <= settings.REQUEST_THREADS
