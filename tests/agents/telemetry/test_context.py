"""Trace context (agents.telemetry.context): a `traceparent` in on every protocol route is
the parent of the run's `invoke_agent` span, the answer's `traceparent` names that span in
the same trace, the run keeps the trace id; model providers' requests carry it on; a
background run keeps the trace of the request that queued it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rest_framework.test import APIClient

from agents.examples import CALCULATOR
from agents.models import RUN_ENDED, Agent, Run
from agents.runtime.tracecontext import SpanRef
from tests.fakes.server import Turn
from tests.support.backends import (  # noqa: F401 (fixtures)
    Backend,
    bedrock_server,
    fake_backend,
    openai_server,
)
from tests.support.telemetry import (  # noqa: F401 (the fixture `exported`)
    PARENT_ID,
    TRACE_ID,
    TRACEPARENT,
    by_name,
    exported,
    parent_of,
)

ASK = {"messages": [{"role": "user", "content": "What is 3 x 5?"}]}
TEXT_PART = {"kind": "text", "text": "What is 3 x 5?"}
# Route (under the agent's latest version, or absolute) and body.
ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "invoke": ("invoke", ASK),
    "invoke-stream": ("invoke-stream", ASK),
    "respond": ("respond", ASK),
    "process": (
        "process",
        {"input": [{"role": "user", "content": [{"type": "text", "text": "What is 3 x 5?"}]}]},
    ),
    "chat": ("chat/completions", ASK),
    "model chat": ("/v1/chat/completions", {**ASK, "model": "Calculator"}),
    "openai": ("/v1/openai/chat/completions", {**ASK, "model": "Calculator"}),
    "a2a": (
        "/v1/a2a/Calculator",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "m-1",
                    "role": "user",
                    "parts": [TEXT_PART],
                }
            },
        },
    ),
    "a2a 1.0": (
        "/v1/a2a/Calculator",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "3x5?"}]}
            },
        },
    ),
}


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def post(client: APIClient, agent: Agent, route: str, **headers: str) -> Any:
    path, body = ROUTES[route]
    if not path.startswith("/"):
        path = f"/v1/agents/{agent.pk}/versions/latest/{path}"
    answer = client.post(path, body, format="json", **headers)
    assert answer.status_code == 200, answer.content
    if answer.streaming:  # read to its end: the run ends, and exports, with its stream
        async_to_sync(_drain)(answer.streaming_content)
    return answer


async def _drain(content: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in content]


@pytest.mark.django_db
@pytest.mark.parametrize("route", list(ROUTES))
def test_the_callers_traceparent_is_the_parent_of_the_run_on_every_route(
    owner_client: APIClient,
    calculator: Agent,
    exported: InMemorySpanExporter,  # noqa: F811
    route: str,
) -> None:
    answer = post(owner_client, calculator, route, HTTP_TRACEPARENT=TRACEPARENT)

    run = Run.objects.get()
    assert run.trace_id == TRACE_ID
    (root,) = by_name(exported)["invoke_agent Calculator"]
    assert f"{root.context.trace_id:032x}" == TRACE_ID
    assert f"{parent_of(root):016x}" == PARENT_ID
    assert answer["traceparent"] == f"00-{TRACE_ID}-{root.context.span_id:016x}-01"
    shown = owner_client.get(f"/v1/runs/{run.pk}").json()
    assert shown["traceId"] == TRACE_ID


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [None, "", "garbage", f"00-{'0' * 32}-{PARENT_ID}-01", f"00-{TRACE_ID}-{'0' * 16}-01"],
)
def test_without_a_valid_traceparent_a_run_starts_a_trace_of_its_own(
    owner_client: APIClient, calculator: Agent, header: str | None
) -> None:
    extra = {} if header is None else {"HTTP_TRACEPARENT": header}

    answer = post(owner_client, calculator, "invoke", **extra)

    run = Run.objects.get()
    own = SpanRef.parse(answer["traceparent"])
    assert own is not None
    assert f"{own.trace_id:032x}" == run.trace_id != TRACE_ID
    assert owner_client.get(f"/v1/runs/{run.pk}").json()["traceId"] == run.trace_id


def test_traceparent_parsing_follows_the_w3c_rules() -> None:
    assert SpanRef.parse(TRACEPARENT) == SpanRef(int(TRACE_ID, 16), int(PARENT_ID, 16), True)
    not_sampled = SpanRef.parse(f"00-{TRACE_ID}-{PARENT_ID}-00")
    assert not_sampled is not None
    assert not not_sampled.sampled
    # A later version may add fields; version 00 may not, and ff is no version.
    assert SpanRef.parse(f"01-{TRACE_ID}-{PARENT_ID}-01-more") is not None
    assert SpanRef.parse(f"00-{TRACE_ID}-{PARENT_ID}-01-more") is None
    assert SpanRef.parse(f"ff-{TRACE_ID}-{PARENT_ID}-01") is None
    assert SpanRef.parse(f" {TRACEPARENT.upper()} ") == SpanRef.parse(TRACEPARENT)


@pytest.mark.django_db
def test_model_providers_requests_carry_the_model_calls_span(
    owner_client: APIClient,
    make_agent: Any,
    fake_backend: Backend,  # noqa: F811
    exported: InMemorySpanExporter,  # noqa: F811
) -> None:
    agent = make_agent("Chat", "tool", config=fake_backend.config(CALCULATOR["config"]))
    fake_backend.script(Turn(text=["Fifteen."]))
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"

    answer = owner_client.post(url, ASK, format="json", HTTP_TRACEPARENT=TRACEPARENT)

    assert answer.status_code == 200, answer.content
    assert fake_backend.fake is not None
    (request,) = fake_backend.fake.requests
    sent = SpanRef.parse(request.headers.get("traceparent") or request.headers.get("Traceparent"))
    assert sent is not None
    (chat,) = [s for s in exported.get_finished_spans() if s.name.startswith("chat ")]
    assert (sent.trace_id, sent.span_id) == (int(TRACE_ID, 16), chat.context.span_id)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.usefixtures("reseed_after_module")
def test_a_background_run_keeps_the_trace_of_the_request_that_queued_it(
    owner_client: APIClient,
    calculator: Agent,
    exported: InMemorySpanExporter,  # noqa: F811
) -> None:
    url = f"/v1/agents/{calculator.pk}/versions/latest/invoke"

    answer = owner_client.post(
        url, {**ASK, "background": True}, format="json", HTTP_TRACEPARENT=TRACEPARENT
    )

    assert answer.status_code == 202, answer.content
    deadline = time.monotonic() + 120  # a wait for the worker, not a measure
    while (run := Run.objects.get()).status not in RUN_ENDED:
        assert time.monotonic() < deadline, run.status
        time.sleep(0.05)
    assert (run.status, run.trace_id) == ("completed", TRACE_ID)
    while not by_name(exported).get("invoke_agent Calculator"):  # exported after the write
        assert time.monotonic() < deadline
        time.sleep(0.05)
    (root,) = by_name(exported)["invoke_agent Calculator"]
    assert f"{parent_of(root):016x}" == PARENT_ID
    # The 202's traceparent named the span the worker's run has.
    assert answer["traceparent"] == f"00-{TRACE_ID}-{root.context.span_id:016x}-01"
