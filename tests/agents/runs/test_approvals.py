"""Tool approvals (docs/api.md#tool-approvals) on the native surface, against the platform
served by uvicorn (tests/live.py) with a fake OpenAI model: a gated call pauses the run
`awaiting_approval` while the step's other calls run; a decision resumes the same run where
it stopped, and tools that count their calls show nothing ran twice; who may decide, once;
bad bodies; expiry; cancel; two deciders at once.

No wall-clock limit: each call waits for its answer, and the two deciders race on a
barrier, not a timer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import httpx2
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from django.test import override_settings
from django.utils import timezone
from google.protobuf.json_format import MessageToDict
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult

from agents.access.permissions import Action, grant
from agents.access.tokens import token_encode
from agents.models import Agent, AgentWebhook, ApprovalRequest, Run, RunEvent
from agents.runs.approvals import runs_expire_approvals
from agents.runs.leases import runs_interrupt_expired
from agents.runtime.tools import functions
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.live import MODEL, platform_port, server_on  # noqa: F401 (the fixture port)
from tests.support.a2a import base, session, tok
from tests.support.backends import openai_server  # noqa: F401
from tests.support.mcp_server import bearer, connect, url
from tests.support.webhooks import Receiver, deliver_all, receiver, webhooks_on_loopback  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]
PATIENCE = 120.0
ASK = {"messages": [{"role": "user", "content": "Refund order 7, it arrived broken."}]}
NDJSON = "application/x-ndjson"

ran: Counter[str] = Counter()  # calls of the counting tools, by name


def refund_order(order_id: str, amount: float) -> str:
    """Refund an order."""
    ran["refund_order"] += 1
    return f"refunded {amount} on order {order_id}"


def look_up_order(order_id: str) -> str:
    """Look up an order."""
    ran["look_up_order"] += 1
    return f"order {order_id}: a kettle, 40.0"


@pytest.fixture(autouse=True)
def counting_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The two tools, registered for this test only; their counts from zero."""
    saved = dict(functions.REGISTRY)
    for func in (refund_order, look_up_order):
        functions.function_tool(func)
    ran.clear()
    yield
    functions.REGISTRY.clear()
    functions.REGISTRY.update(saved)


@pytest.fixture
def model(openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:  # noqa: F811
    openai_server.reset()
    with override_settings(LLM_OFFLINE=False):
        yield openai_server
    openai_server.reset()


def tool(name: str, require: Any = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "toolType": "function",
        "name": name,
        "description": name,
        "funcName": name,
    }
    if require is not None:
        entry["requireApproval"] = require
    return entry


@pytest.fixture
def shop(make_agent: Callable[..., Agent]) -> Agent:
    """Refunds need a person when over 20; look-ups never do."""
    config = {
        "llmModelId": MODEL,
        "systemPrompt": "You help with orders.",
        "tools": [
            tool("look_up_order"),
            tool(
                "refund_order",
                {
                    "argumentsMatch": {
                        "type": "object",
                        "properties": {"amount": {"type": "number", "exclusiveMinimum": 20}},
                    }
                },
            ),
        ],
    }
    return make_agent("Shop", "tool", config=config)


def client(port: int, user: Any) -> httpx.Client:
    token = token_encode(user_id=user.pk, environment_id=None)[0]
    return httpx.Client(
        base_url=f"http://127.0.0.1:{port}/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=PATIENCE,
    )


def invoke(http: httpx.Client, agent: Agent, route: str = "invoke") -> httpx.Response:
    return http.post(f"/agents/{agent.pk}/versions/latest/{route}", json=ASK)


def decide(
    http: httpx.Client, run_id: str, *decisions: dict[str, Any], **headers: str
) -> httpx.Response:
    return http.post(
        f"/runs/{run_id}/approvals", json={"decisions": list(decisions)}, headers=headers
    )


def pause_turns() -> tuple[Turn, ...]:
    """The model looks the order up and refunds 40 in one step (the refund waits)."""
    return (
        Turn(
            calls=[
                Call("look_up_order", {"order_id": "7"}, id="call_look"),
                Call("refund_order", {"order_id": "7", "amount": 40.0}, id="call_refund"),
            ]
        ),
    )


def test_a_gated_call_pauses_the_run_and_an_approval_resumes_it_running_nothing_twice(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded 40 on order 7."]))
    with client(port, owner) as http:
        paused = invoke(http, shop)
        assert paused.status_code == 200, paused.text
        body = paused.json()
        run_id = paused.headers["X-Run-Id"]
        assert body["status"] == "awaiting_approval"
        [asked] = body["approvalRequests"]
        assert (asked["name"], json.loads(asked["arguments"])) == (
            "refund_order",
            {"order_id": "7", "amount": 40.0},
        )
        assert ran == {"look_up_order": 1}  # the step's other call ran; the refund did not
        run = Run.objects.get(pk=run_id)
        assert run.status == "awaiting_approval"
        assert run.lease_until is not None
        assert run.completed_at is None
        [row] = ApprovalRequest.objects.filter(run=run)
        assert (str(row.pk), row.status, row.tool) == (
            asked["approvalRequestId"],
            "pending",
            "refund_order",
        )
        assert [s["type"] for s in run.steps][-1] == "approval_request"

        resumed = decide(
            http, run_id, {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        )
        assert resumed.status_code == 200, resumed.text
        assert resumed.headers["X-Run-Id"] == run_id
        answer = resumed.json()
        assert answer["output"][-1]["content"][0]["text"] == "Refunded 40 on order 7."
        assert "status" not in answer
        again = decide(
            http, run_id, {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        )
        assert again.status_code == 409, again.text

    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2  # no model call was made again
    results = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        ("call_look", "order 7: a kettle, 40.0"),
        ("call_refund", "refunded 40.0 on order 7"),
    ]
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.paused) == ("completed", None)
    assert run.response_id == body["id"] == answer["id"]
    kinds = [s["type"] for s in run.steps]
    assert kinds == [
        "model_call",
        "tool_call",
        "approval_request",
        "approval_decision",
        "tool_call",
        "model_call",
    ]
    decision = run.steps[3]
    assert (decision["decision"], decision["by"]) == ("approve", owner.username)
    assert run.tokens_usage["total_tokens"] == 2 * (11 + 7)
    indexes = list(
        RunEvent.objects.filter(run=run).order_by("index").values_list("index", flat=True)
    )
    assert indexes == list(range(len(indexes)))  # the resumed turn's events follow its own
    assert ApprovalRequest.objects.get(pk=asked["approvalRequestId"]).decided_by == owner


def test_a_rejection_tells_the_model_with_the_message_and_the_tool_never_runs(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["I could not refund it."]))
    with client(port, owner) as http:
        paused = invoke(http, shop).json()
        [asked] = paused["approvalRequests"]
        run_id = Run.objects.get(response_id=paused["id"]).pk
        said = decide(
            http,
            str(run_id),
            {
                "approvalRequestId": asked["approvalRequestId"],
                "decision": "reject",
                "message": "Send a replacement instead.",
            },
        )
        assert said.status_code == 200, said.text
    assert ran == {"look_up_order": 1}
    [_, rejected] = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert "rejected by owner" in rejected["content"]
    assert "Send a replacement instead." in rejected["content"]
    assert Run.objects.get(pk=run_id).steps[3]["message"] == "Send a replacement instead."


def test_a_call_whose_arguments_do_not_match_runs_and_unparsable_ones_wait(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(
        Turn(calls=[Call("refund_order", {"order_id": "7", "amount": 5.0})]),
        Turn(text=["Refunded 5."]),
        Turn(calls=[Call("refund_order", '{"order_id": "7", "amount": ')]),
    )
    with client(port, owner) as http:
        small = invoke(http, shop).json()
        assert "status" not in small
        assert ran == {"refund_order": 1}
        broken = invoke(http, shop).json()
    assert broken["status"] == "awaiting_approval"  # fails closed
    assert ran == {"refund_order": 1}


def test_the_stream_ends_with_the_request_and_the_decision_streams_the_rest(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded ", "40."]))
    with client(port, owner) as http:
        streamed = invoke(http, shop, "invoke-stream")
        lines = [json.loads(line) for line in streamed.text.splitlines()]
        last = lines[-1]
        assert last["type"] == "response.approval_requested"
        assert last["response"]["status"] == "awaiting_approval"
        [asked] = last["response"]["approvalRequests"]
        run_id = streamed.headers["X-Run-Id"]
        rest = decide(
            http,
            run_id,
            {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"},
            Accept=NDJSON,
        )
        assert rest.status_code == 200
        assert rest.headers["Content-Type"].startswith(NDJSON)
        more = [json.loads(line) for line in rest.text.splitlines()]
        events = http.get(f"/runs/{run_id}/events").text.splitlines()
    assert [m["type"] for m in more] == [
        "response.created",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.completed",
    ]
    assert more[0]["response"]["id"] == lines[0]["response"]["id"]
    # The run's events are both turns', in order, each once.
    followed = [json.loads(line) for line in events]
    assert [f["type"] for f in followed] == [x["type"] for x in lines + more]
    indexes = [f["index"] for f in followed]  # tool results are stored, not shown
    assert indexes == sorted(set(indexes))


def test_bad_decisions_are_refused_at_their_path_and_change_nothing(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any, make_agent: Callable[..., Agent]
) -> None:
    model.script(*pause_turns(), *pause_turns())
    with client(port, owner) as http:
        first = invoke(http, shop)
        other = invoke(http, shop)
        run_id, other_id = first.headers["X-Run-Id"], other.headers["X-Run-Id"]
        [asked] = first.json()["approvalRequests"]
        [elsewhere] = other.json()["approvalRequests"]
        yes = {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        cases = [
            ({"decisions": []}, ["body", "decisions"]),
            ({}, ["body", "decisions"]),
            ({"decisions": [{**yes, "decision": "maybe"}]}, ["body", "decisions", 0, "decision"]),
            (
                {"decisions": [yes, {**yes, "decision": "reject"}]},
                ["body", "decisions", 1, "approvalRequestId"],
            ),
            (
                {
                    "decisions": [
                        {"approvalRequestId": elsewhere["approvalRequestId"], "decision": "approve"}
                    ]
                },
                ["body", "decisions", 0, "approvalRequestId"],
            ),
            (
                {"decisions": [{**yes, "approvalRequestId": "not-a-uuid"}]},
                ["body", "decisions", 0, "approvalRequestId"],
            ),
        ]
        for body, path in cases:
            refused = http.post(f"/runs/{run_id}/approvals", json=body)
            assert refused.status_code == 400, (body, refused.text)
            assert path in [e["loc"] for e in refused.json()["detail"]], refused.json()
        assert http.post("/runs/nope/approvals", json={"decisions": [yes]}).status_code == 400
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"
    assert ApprovalRequest.objects.get(pk=asked["approvalRequestId"]).status == "pending"
    assert Run.objects.get(pk=other_id).status == "awaiting_approval"
    assert ran == {"look_up_order": 2}


def test_only_the_caller_or_an_approve_holder_decides(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any, env: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded."]))
    stranger = UserFactory(username="stranger")
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, shop)
    approver = UserFactory(username="approver")
    grant(approver, Action.APPROVE, shop)
    with client(port, owner) as http:
        paused = invoke(http, shop)
    run_id = paused.headers["X-Run-Id"]
    [asked] = paused.json()["approvalRequests"]
    yes = {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
    with client(port, stranger) as http:
        assert decide(http, run_id, yes).status_code == 404
    with client(port, auditor) as http:
        assert decide(http, run_id, yes).status_code == 403
    assert ran == {"look_up_order": 1}
    with client(port, approver) as http:
        resumed = decide(http, run_id, yes)
        assert resumed.status_code == 200, resumed.text
    assert ran == {"look_up_order": 1, "refund_order": 1}
    run = Run.objects.get(pk=run_id)
    assert run.caller == owner  # the run stays its caller's; the decision is the approver's
    assert run.steps[3]["by"] == "approver"


def test_two_deciders_at_once_one_wins_and_the_tool_runs_once(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded."]))
    approver = UserFactory(username="approver")
    grant(approver, Action.APPROVE, shop)
    with client(port, owner) as http:
        paused = invoke(http, shop)
    run_id = paused.headers["X-Run-Id"]
    [asked] = paused.json()["approvalRequests"]
    barrier = threading.Barrier(2)

    def race(user: Any, decision: str) -> int:
        with client(port, user) as http:
            barrier.wait()
            body = {"approvalRequestId": asked["approvalRequestId"], "decision": decision}
            return decide(http, run_id, body).status_code

    with ThreadPoolExecutor(2) as pool:
        codes = sorted(pool.map(race, [owner, approver], ["approve", "approve"]))
    assert codes == [200, 409]
    assert ran == {"look_up_order": 1, "refund_order": 1}


def test_a_waiting_run_expires_after_its_ttl_and_a_late_decision_is_refused(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns())
    with client(port, owner) as http:
        paused = invoke(http, shop)
        run_id = paused.headers["X-Run-Id"]
        [asked] = paused.json()["approvalRequests"]
        Run.objects.filter(pk=run_id).update(lease_until=timezone.now() - timedelta(seconds=1))
        assert runs_expire_approvals() == 1
        late = decide(
            http, run_id, {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        )
    assert late.status_code == 409
    assert "expired" in late.json()["detail"]
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.error["code"], run.paused) == ("canceled", "approval_expired", None)
    assert ApprovalRequest.objects.get(pk=asked["approvalRequestId"]).status == "expired"
    last = run.steps[-1]  # the timeline says what never was decided
    assert (last["type"], last["decision"], last["approvalRequestId"]) == (
        "approval_decision",
        "expired",
        asked["approvalRequestId"],
    )
    assert ran == {"look_up_order": 1}


def test_the_deadline_is_the_versions_approval_ttl(
    port: int, model: FakeOpenAI, owner: Any, make_agent: Callable[..., Agent]
) -> None:
    config = {
        "llmModelId": MODEL,
        "approvalTtl": 600,
        "tools": [tool("refund_order", "always")],
    }
    agent = make_agent("Strict", "tool", config=config)
    model.script(Turn(calls=[Call("refund_order", {"order_id": "1", "amount": 1.0})]))
    before = timezone.now()
    with client(port, owner) as http:
        run_id = invoke(http, agent).headers["X-Run-Id"]
    run = Run.objects.get(pk=run_id)
    assert (
        before + timedelta(seconds=600)
        <= run.lease_until
        <= timezone.now() + timedelta(seconds=600)
    )


def test_a_waiting_run_is_canceled_at_once(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns())
    with client(port, owner) as http:
        paused = invoke(http, shop)
        run_id = paused.headers["X-Run-Id"]
        [asked] = paused.json()["approvalRequests"]
        assert http.post(f"/runs/{run_id}/cancel").status_code == 202
        late = decide(
            http, run_id, {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        )
    assert late.status_code == 409
    assert Run.objects.get(pk=run_id).status == "canceled"
    assert ran == {"look_up_order": 1}


def test_chat_completions_refuse_a_gated_call_to_the_model(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["I cannot refund it here."]))
    with client(port, owner) as http:
        answer = http.post(
            f"/agents/{shop.pk}/versions/latest/chat/completions",
            json={"messages": ASK["messages"]},
        )
    assert answer.status_code == 200, answer.text
    assert ran == {"look_up_order": 1}
    [_, refused] = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert "needs a person's approval" in refused["content"]
    assert Run.objects.get(agent=shop).status == "completed"


@pytest.mark.usefixtures("webhooks_on_loopback")
def test_each_wait_is_a_run_awaiting_approval_webhook_with_its_requests(
    port: int,
    model: FakeOpenAI,
    shop: Agent,
    owner: Any,
    receiver: Receiver,  # noqa: F811
) -> None:
    events = ["run.awaiting_approval", "run.completed"]
    AgentWebhook.objects.create(agent=shop, url=receiver.url, events=events)
    again = Turn(calls=[Call("refund_order", {"order_id": "8", "amount": 30.0}, id="call_2")])
    model.script(*pause_turns(), again, Turn(text=["Both refunded."]))
    with client(port, owner) as http:
        first = invoke(http, shop)
        run_id = first.headers["X-Run-Id"]
        [asked] = first.json()["approvalRequests"]
        deliver_all()
        second = decide(
            http, run_id, {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        )
        [asked_again] = second.json()["approvalRequests"]  # the model asked for another
        deliver_all()
        done = decide(
            http,
            run_id,
            {"approvalRequestId": asked_again["approvalRequestId"], "decision": "approve"},
        )
        assert done.status_code == 200, done.text
        deliver_all()
    payloads = [json.loads(got.body) for got in receiver.received]
    assert [p["type"] for p in payloads] == [*events[:1], *events]
    waits = [p["data"]["approvalRequests"] for p in payloads[:2]]
    assert [[r["approvalRequestId"] for r in w] for w in waits] == [
        [asked["approvalRequestId"]],
        [asked_again["approvalRequestId"]],
    ]
    assert waits[0][0]["tool"] == "refund_order"
    assert {p["data"]["id"] for p in payloads} == {run_id}
    assert ran == {"look_up_order": 1, "refund_order": 2}


def test_a_run_waits_through_its_servers_death_and_resumes_on_another(
    model: FakeOpenAI, owner: Any, make_agent: Callable[..., Agent], tmp_path: Any
) -> None:
    # Server processes of their own (tests/live.py), which know the built-in tools only.
    config = {
        "llmModelId": MODEL,
        "tools": [{**tool("multiply", "always"), "funcName": "multiply"}],
    }
    agent = make_agent("Multiplier", "tool", config=config)
    model.script(Turn(calls=[Call("multiply", {"a": 3, "b": 5}, id="call_m")]), Turn(text=["15."]))
    with server_on(model, tmp_path / "first.log") as first, client(first.port, owner) as http:
        paused = invoke(http, agent)
        assert paused.status_code == 200, paused.text
        first.kill()  # SIGKILL: no shutdown, nothing written on the way out
    run_id = paused.headers["X-Run-Id"]
    [asked] = paused.json()["approvalRequests"]
    assert runs_interrupt_expired() == 0  # a waiting run holds no process: nothing to sweep
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"
    with server_on(model, tmp_path / "second.log") as second, client(second.port, owner) as http:
        yes = {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
        resumed = decide(http, run_id, yes)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["output"][-1]["content"][0]["text"] == "15."
    assert len(model.bodies) == 2
    [result] = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert (result["tool_call_id"], result["content"]) == ("call_m", "15")
    assert Run.objects.get(pk=run_id).status == "completed"


def test_a_background_decision_answers_202_and_the_run_goes_on_in_the_server(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded."]))
    with client(port, owner) as http:
        paused = invoke(http, shop)
        run_id = paused.headers["X-Run-Id"]
        [asked] = paused.json()["approvalRequests"]
        body = {
            "decisions": [{"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}],
            "background": True,
        }
        accepted = http.post(f"/runs/{run_id}/approvals", json=body)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json() == {"runId": run_id, "status": "in_progress"}
        followed = [
            json.loads(line) for line in http.get(f"/runs/{run_id}/events").text.splitlines()
        ]
    assert followed[-1]["type"] == "response.completed"  # followed to its end
    assert Run.objects.get(pk=run_id).status == "completed"
    assert ran == {"look_up_order": 1, "refund_order": 1}


# ---------------------------------------------------------------- process


def process(http: httpx.Client, agent: Agent, body: dict[str, Any]) -> httpx.Response:
    return http.post(f"/agents/{agent.pk}/versions/latest/process", json=body)


def approval_response(request_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"approval_request_id": request_id, "approve": approve}
    if reason:
        data["reason"] = reason
    return {"type": "mcp_approval_response", "content": [{"type": "data", "data": data}]}


PROCESS_ASK = {
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "Refund 7"}]}
    ],
    "stream": False,
}


def test_process_asks_with_mcp_approval_request_and_an_mcp_approval_response_goes_on(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded."]))
    with client(port, owner) as http:
        paused = process(http, shop, PROCESS_ASK)
        assert paused.status_code == 200, paused.text
        body = paused.json()
        assert body["status"] == "completed"  # the turn; its output says what waits
        [asking] = [m for m in body["output"] if m["type"] == "mcp_approval_request"]
        data = asking["content"][0]["data"]
        assert (data["name"], json.loads(data["arguments"])["amount"]) == ("refund_order", 40.0)
        assert asking["id"] == data["approval_request_id"]  # the item is the request
        run_id = paused.headers["X-Run-Id"]
        assert Run.objects.get(pk=run_id).status == "awaiting_approval"
        answer = {"input": [approval_response(data["approval_request_id"], True)], "stream": False}
        resumed = process(http, shop, answer)
        assert resumed.status_code == 200, resumed.text
        assert resumed.headers["X-Run-Id"] == run_id
        texts = [
            c["text"]
            for m in resumed.json()["output"]
            if m["type"] == "message"
            for c in m["content"]
            if c["type"] == "text"
        ]
        assert texts == ["Refunded."]
        again = process(http, shop, answer)
        assert again.status_code == 409
        assert again.json()["status"] == "failed"
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2


def test_process_streams_the_request_and_a_rejection_with_its_reason(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Not refunded."]))
    with client(port, owner) as http:
        streamed = process(http, shop, {**PROCESS_ASK, "stream": True})
        events = [
            json.loads(line[5:]) for line in streamed.text.splitlines() if line.startswith("data:")
        ]
        [asked] = [
            e["content"][0]["data"]
            for e in events
            if e.get("object") == "message"
            and e.get("type") == "mcp_approval_request"
            and e.get("status") == "completed"
        ]
        assert events[-1]["object"] == "response"
        rest = process(
            http,
            shop,
            {
                "input": [approval_response(asked["approval_request_id"], False, "Too much.")],
                "stream": True,
            },
        )
        more = [json.loads(line[5:]) for line in rest.text.splitlines() if line.startswith("data:")]
    assert more[-1]["status"] == "completed"
    assert [e["sequence_number"] for e in more] == list(range(len(more)))
    told = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"][-1]
    assert "Too much." in told["content"]
    assert ran == {"look_up_order": 1}


def test_process_refuses_bad_approval_responses_at_their_path(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns())
    with client(port, owner) as http:
        paused = process(http, shop, PROCESS_ASK).json()
        [asking] = [m for m in paused["output"] if m["type"] == "mcp_approval_request"]
        request_id = asking["content"][0]["data"]["approval_request_id"]
        good = approval_response(request_id, True)
        at = ["body", "input", 0, "content", 0, "data"]
        cases = [
            ([approval_response(str(uuid.uuid4()), True)], [*at, "approval_request_id"]),
            (
                [{**good, "content": [{"type": "data", "data": {"approve": True}}]}],
                [*at, "approval_request_id"],
            ),
            (
                [
                    {
                        **good,
                        "content": [
                            {
                                "type": "data",
                                "data": {"approval_request_id": request_id, "approve": "yes"},
                            }
                        ],
                    }
                ],
                [*at, "approve"],
            ),
            ([good, good], ["body", "input", 1, "content", 0, "data", "approval_request_id"]),
            ([good, PROCESS_ASK["input"][0]], ["body", "input", 1, "type"]),
        ]
        for items, path in cases:
            refused = process(http, shop, {"input": items, "stream": False})
            assert refused.status_code == 400, (items, refused.text)
            assert refused.json()["status"] == "failed"
            # The protocol's error says where, as `input.0.content.0.data.…: why`.
            assert ".".join(str(p) for p in path[1:]) + ":" in refused.json()["error"]["message"]
    assert ApprovalRequest.objects.get(pk=request_id).status == "pending"
    assert ran == {"look_up_order": 1}


# ---------------------------------------------------------------- A2A, with the a2a-sdk client


def a2a_send(
    port: int, user: Any, agent: Agent, message: pb.Message, *, version: str, streaming: bool
) -> list[pb.StreamResponse]:
    """Every update the SDK's client yields for `message`, over the card's interface of that
    protocol version."""
    return asyncio.run(_send(port, tok(user), agent.name, message, version, streaming))


async def _send(
    port: int, token: str, name: str, message: pb.Message, version: str, streaming: bool
) -> list[pb.StreamResponse]:
    async with session(token) as http:
        card = await A2ACardResolver(http, base(port, name)).get_agent_card()
        kept = [i for i in card.supported_interfaces if i.protocol_version == version]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
        sdk = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        request = pb.SendMessageRequest(message=message)
        return [update async for update in sdk.send_message(request)]


def last_task_state(updates: list[pb.StreamResponse]) -> tuple[int, pb.Message | None]:
    last = updates[-1]
    status = last.task.status if last.HasField("task") else last.status_update.status
    return status.state, (status.message if status.HasField("message") else None)


def decisions_message(task_id: str, context_id: str, *decisions: dict[str, Any]) -> pb.Message:
    part = pb.Part()
    part.data.struct_value.update({"decisions": list(decisions)})
    return pb.Message(
        message_id=str(uuid.uuid4()),
        role=pb.ROLE_USER,
        task_id=task_id,
        context_id=context_id,
        parts=[part],
    )


@pytest.mark.parametrize(("version", "streaming"), [("1.0", False), ("0.3", True)])
def test_a2a_asks_with_input_required_and_a_message_on_the_task_resumes_it(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any, version: str, streaming: bool
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded 40."]))
    ask = pb.Message(message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text="Refund 7")])
    asked = a2a_send(port, owner, shop, ask, version=version, streaming=streaming)
    state, said = last_task_state(asked)
    assert state == pb.TASK_STATE_INPUT_REQUIRED
    assert said is not None
    [data] = [MessageToDict(p.data) for p in said.parts if p.WhichOneof("content") == "data"]
    [waiting] = data["approvalRequests"]
    assert waiting["name"] == "refund_order"
    first = asked[-1]
    task_id = first.task.id if first.HasField("task") else first.status_update.task_id
    context_id = first.task.context_id if first.HasField("task") else first.status_update.context_id
    assert Run.objects.get(pk=task_id).status == "awaiting_approval"
    assert ran == {"look_up_order": 1}

    decide_it = decisions_message(
        task_id,
        context_id,
        {"approvalRequestId": waiting["approvalRequestId"], "decision": "approve"},
    )
    went_on = a2a_send(port, owner, shop, decide_it, version=version, streaming=streaming)
    state, _ = last_task_state(went_on)
    assert state == pb.TASK_STATE_COMPLETED
    final = went_on[-1]
    if final.HasField("task"):
        assert final.task.id == task_id
        assert final.task.artifacts[0].parts[0].text == "Refunded 40."
    else:
        assert final.status_update.task_id == task_id
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2
    assert Run.objects.get(pk=task_id).status == "completed"


def test_a2a_refuses_a_bad_decision_and_a_second_one_in_json_rpc(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Done."]))
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": "Refund 7"}],
            }
        },
    }
    with client(port, owner) as http:
        task = http.post(f"/a2a/{shop.name}", json=send).json()["result"]
        assert task["status"]["state"] == "input-required"
        [data] = [p["data"] for p in task["status"]["message"]["parts"] if p["kind"] == "data"]
        request_id = data["approvalRequests"][0]["approvalRequestId"]

        def reply(*parts: dict[str, Any]) -> dict[str, Any]:
            message = {
                "kind": "message",
                "messageId": str(uuid.uuid4()),
                "role": "user",
                "taskId": task["id"],
                "contextId": task["contextId"],
                "parts": list(parts),
            }
            body = {**send, "params": {"message": message}}
            return http.post(f"/a2a/{shop.name}", json=body).json()  # type: ignore[no-any-return]

        no_decisions = reply({"kind": "text", "text": "yes"})
        assert no_decisions["error"]["code"] == -32602
        bad = reply(
            {
                "kind": "data",
                "data": {"decisions": [{"approvalRequestId": request_id, "decision": "maybe"}]},
            }
        )
        assert bad["error"]["code"] == -32602
        assert bad["error"]["data"]["path"] == [
            "params",
            "message",
            "parts",
            0,
            "data",
            "decisions",
            0,
            "decision",
        ]
        stranger = reply(
            {
                "kind": "data",
                "data": {
                    "decisions": [{"approvalRequestId": str(uuid.uuid4()), "decision": "approve"}]
                },
            }
        )
        assert stranger["error"]["data"]["path"] == [
            "params",
            "message",
            "parts",
            0,
            "data",
            "decisions",
            0,
            "approvalRequestId",
        ]
        yes = {
            "kind": "data",
            "data": {"decisions": [{"approvalRequestId": request_id, "decision": "approve"}]},
        }
        done = reply(yes)
        assert done["result"]["status"]["state"] == "completed"
        again = reply(yes)
        assert again["error"]["code"] == -32004  # UnsupportedOperation: it waits no more
    assert ran == {"look_up_order": 1, "refund_order": 1}


async def _look(
    port: int, token: str, name: str, task_id: str, version: str
) -> tuple[pb.Task, list[pb.StreamResponse]]:
    """The task as GetTask answers it, and every update a subscription to it yields."""
    async with session(token) as http:
        card = await A2ACardResolver(http, base(port, name)).get_agent_card()
        kept = [i for i in card.supported_interfaces if i.protocol_version == version]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
        sdk = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        task = await sdk.get_task(pb.GetTaskRequest(id=task_id))
        updates = [u async for u in sdk.subscribe(pb.SubscribeToTaskRequest(id=task_id))]
        return task, updates


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_a2a_shows_a_waiting_task_input_required_and_a_rejection_resumes_it_running_nothing(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any, version: str
) -> None:
    model.script(*pause_turns(), Turn(text=["Not refunded."]))
    ask = pb.Message(message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text="Refund 7")])
    [asked] = a2a_send(port, owner, shop, ask, version=version, streaming=False)
    # Bounded so that a subscription that never closed fails here instead of hanging.
    task, subscribed = asyncio.run(
        asyncio.wait_for(_look(port, tok(owner), shop.name, asked.task.id, version), 60)
    )
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
    [data] = [MessageToDict(p.data) for p in task.status.message.parts if p.HasField("data")]
    [waiting] = data["approvalRequests"]
    assert waiting["name"] == "refund_order"
    assert "40" in waiting["arguments"]
    # A subscription to a waiting task is its opening task, final: nothing comes until a
    # decision, which a message on the task makes.
    assert [u.task.status.state for u in subscribed] == [pb.TASK_STATE_INPUT_REQUIRED]

    no = decisions_message(
        task.id,
        task.context_id,
        {
            "approvalRequestId": waiting["approvalRequestId"],
            "decision": "reject",
            "message": "Send a replacement instead.",
        },
    )
    [went_on] = a2a_send(port, owner, shop, no, version=version, streaming=False)
    assert (went_on.task.id, went_on.task.status.state) == (task.id, pb.TASK_STATE_COMPLETED)
    assert went_on.task.artifacts[0].parts[0].text == "Not refunded."
    assert ran == {"look_up_order": 1}  # the rejected refund never ran
    [_, rejected] = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert "Send a replacement instead." in rejected["content"]


@pytest.mark.usefixtures("webhooks_on_loopback")
def test_a2a_pushes_the_wait_input_required_and_then_the_end_to_the_tasks_config(
    port: int,
    model: FakeOpenAI,
    shop: Agent,
    owner: Any,
    receiver: Receiver,  # noqa: F811
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded 40."]))
    config = pb.TaskPushNotificationConfig(url=receiver.url, token="tok-1")
    ask = pb.Message(message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text="Refund 7")])

    token, name = tok(owner), shop.name  # read here: the coroutine may not touch the database

    async def send_with_config() -> list[pb.StreamResponse]:
        async with session(token) as http:
            card = await A2ACardResolver(http, base(port, name)).get_agent_card()
            sdk = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            request = pb.SendMessageRequest(
                message=ask,
                configuration=pb.SendMessageConfiguration(task_push_notification_config=config),
            )
            return [update async for update in sdk.send_message(request)]

    [asked] = asyncio.run(send_with_config())
    deliver_all()
    [waited] = [json.loads(got.body) for got in receiver.received]
    status = waited["task"]["status"]
    assert (waited["task"]["id"], status["state"]) == (asked.task.id, "TASK_STATE_INPUT_REQUIRED")
    [data] = [part["data"] for part in status["message"]["parts"] if "data" in part]
    [waiting] = data["approvalRequests"]
    assert receiver.received[0].headers["X-A2A-Notification-Token"] == "tok-1"

    yes = decisions_message(
        asked.task.id,
        asked.task.context_id,
        {"approvalRequestId": waiting["approvalRequestId"], "decision": "approve"},
    )
    a2a_send(port, owner, shop, yes, version="1.0", streaming=False)
    deliver_all()
    states = [json.loads(got.body)["task"]["status"]["state"] for got in receiver.received]
    assert states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    assert ran == {"look_up_order": 1, "refund_order": 1}


# ---------------------------------------------------------------- MCP, with the mcp SDK client


def mcp_call(port: int, user: Any, name: str, arguments: dict[str, Any], era: str) -> Any:
    headers = bearer(user)

    async def main() -> Any:
        async with connect(port, headers, era) as sdk:
            return await sdk.call_tool(name, arguments)

    return asyncio.run(main())


@pytest.mark.parametrize("era", ["handshake", "per-request"])
def test_mcp_names_what_waits_and_a_later_call_with_approvals_goes_on(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any, era: str
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded 40."]))
    paused = mcp_call(port, owner, "Shop", {"message": "Refund order 7"}, era)
    assert not paused.is_error
    waiting = paused.structured_content
    assert waiting["status"] == "awaiting_approval"
    run_id = waiting["runId"]
    assert paused.meta["agentbuilder/runId"] == run_id
    [asked] = waiting["approvalRequests"]
    assert asked["name"] == "refund_order"
    assert "approvals" in paused.content[0].text  # the calling model is told how to go on
    assert ran == {"look_up_order": 1}

    decisions = [{"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}]
    approvals = {"approvals": {"runId": run_id, "decisions": decisions}}
    went_on = mcp_call(port, owner, "Shop", approvals, era)
    assert not went_on.is_error, went_on
    assert went_on.content[0].text == "Refunded 40."
    assert went_on.meta["agentbuilder/runId"] == run_id  # the same run
    again = mcp_call(port, owner, "Shop", approvals, era)
    assert again.is_error
    assert "decided already" in again.content[0].text or "does not wait" in again.content[0].text
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2


def test_mcp_refuses_bad_approvals_at_their_path(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["No."]))
    paused = mcp_call(port, owner, "Shop", {"message": "Refund order 7"}, "per-request")
    run_id = paused.structured_content["runId"]
    [asked] = paused.structured_content["approvalRequests"]
    yes = {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
    cases = [
        ({}, ["arguments", "message"]),
        (
            {"message": "hi", "approvals": {"runId": run_id, "decisions": [yes]}},
            ["arguments", "approvals"],
        ),
        (
            {"approvals": {"runId": run_id, "decisions": []}},
            ["arguments", "approvals", "decisions"],
        ),
        (
            {"approvals": {"runId": run_id, "decisions": [{**yes, "decision": "maybe"}]}},
            ["arguments", "approvals", "decisions", 0, "decision"],
        ),
        (
            {
                "approvals": {
                    "runId": run_id,
                    "decisions": [{**yes, "approvalRequestId": str(uuid.uuid4())}],
                }
            },
            ["arguments", "approvals", "decisions", 0, "approvalRequestId"],
        ),
    ]
    for arguments, path in cases:
        refused = mcp_call(port, owner, "Shop", arguments, "per-request")
        assert refused.is_error, arguments
        details = refused.structured_content["error"]["details"]
        assert path in [d["loc"] for d in details], (arguments, details)
    rejected = mcp_call(
        port,
        owner,
        "Shop",
        {
            "approvals": {
                "runId": run_id,
                "decisions": [{**yes, "decision": "reject", "message": "No refunds."}],
            }
        },
        "per-request",
    )
    assert rejected.content[0].text == "No."
    assert (
        "No refunds."
        in [m for m in model.bodies[1]["messages"] if m["role"] == "tool"][-1]["content"]
    )
    assert ran == {"look_up_order": 1}


def mcp_call_eliciting(
    port: int,
    user: Any,
    answers: Callable[[Any], ElicitResult],
    seeded: dict[str, Any] | None = None,
) -> Any:
    """A 2026 client that declares form elicitation: a waiting call's input-required result
    reaches `answers`, one form per waiting call, and the SDK retries with what it said.
    `seeded`: input responses the first call already carries (a retry sent again)."""

    headers = bearer(user)  # before the loop: it reads the database

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return answers(params)

    async def main() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=PATIENCE) as http:
            transport = streamable_http_client(url(port), http_client=http)
            async with Client(transport, cache=None, elicitation_callback=elicit) as sdk:
                return await sdk.call_tool(
                    "Shop", {"message": "Refund order 7"}, input_responses=seeded
                )

    return asyncio.run(main())


def test_mcp_asks_a_client_that_elicits_and_its_answer_resumes_the_same_run(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded 40."]))
    forms: list[Any] = []

    def approve(form: Any) -> ElicitResult:
        forms.append(form)
        return ElicitResult(action="accept", content={"decision": "approve", "message": "Fine."})

    done = mcp_call_eliciting(port, owner, approve)
    assert not done.is_error, done
    assert done.content[0].text == "Refunded 40."
    [form] = forms
    assert "refund_order" in form.message
    assert form.requested_schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    [run] = Run.objects.all()  # the retry resumed the run the first call opened
    assert done.meta["agentbuilder/runId"] == str(run.pk)
    assert run.status == "completed"
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2
    [request] = ApprovalRequest.objects.all()
    assert (request.status, request.message) == ("approved", "Fine.")

    # The same answer again: decided already, an error result; nothing runs.
    again = mcp_call_eliciting(
        port,
        owner,
        approve,
        seeded={str(request.pk): ElicitResult(action="accept", content={"decision": "approve"})},
    )
    assert again.is_error
    assert "decided already" in again.content[0].text or "does not wait" in again.content[0].text
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2


def test_mcp_a_declined_form_rejects_and_a_bad_answer_is_refused_at_its_path(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["No refund."]))
    refused = mcp_call_eliciting(
        port, owner, lambda form: ElicitResult(action="accept", content={"decision": "maybe"})
    )
    assert refused.is_error
    [request] = ApprovalRequest.objects.all()
    details = refused.structured_content["error"]["details"]
    assert [d["loc"] for d in details] == [
        ["inputResponses", str(request.pk), "content", "decision"]
    ]
    assert Run.objects.get().status == "awaiting_approval"  # the bad answer changed nothing

    declined = mcp_call_eliciting(
        port,
        owner,
        lambda form: ElicitResult(action="decline"),
        seeded={str(request.pk): ElicitResult(action="decline")},
    )
    assert not declined.is_error, declined
    assert declined.content[0].text == "No refund."
    request.refresh_from_db()
    assert request.status == "rejected"
    assert ran == {"look_up_order": 1}  # the refund never ran
    assert len(model.bodies) == 2


def test_two_waiting_calls_decided_one_at_a_time_resume_once_the_second_is(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    two = Turn(
        calls=[
            Call("refund_order", {"order_id": "7", "amount": 40.0}, id="call_a"),
            Call("refund_order", {"order_id": "8", "amount": 25.0}, id="call_b"),
        ]
    )
    model.script(two, Turn(text=["One refunded."]))
    approver = UserFactory(username="approver")
    grant(approver, Action.APPROVE, shop)
    with client(port, owner) as http:
        paused = invoke(http, shop)
        run_id = paused.headers["X-Run-Id"]
        first, second = paused.json()["approvalRequests"]
        partly = decide(
            http, run_id, {"approvalRequestId": first["approvalRequestId"], "decision": "approve"}
        )
        assert partly.status_code == 202, partly.text
        assert partly.json()["pendingApprovalRequests"] == [second["approvalRequestId"]]
        assert Run.objects.get(pk=run_id).status == "awaiting_approval"
        assert ran == {}  # nothing runs until every call is decided
    with client(port, approver) as http:
        no = {
            "approvalRequestId": second["approvalRequestId"],
            "decision": "reject",
            "message": "Not 8.",
        }
        resumed = decide(http, run_id, no)
        assert resumed.status_code == 200, resumed.text
    assert ran == {"refund_order": 1}
    results = [m for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ["call_a", "call_b"]
    assert "Not 8." in results[1]["content"]
    steps = [s for s in Run.objects.get(pk=run_id).steps if s["type"] == "approval_decision"]
    assert [(s["decision"], s["by"]) for s in steps] == [
        ("approve", "owner"),
        ("reject", "approver"),
    ]


def test_process_decides_in_the_background_and_the_same_run_goes_on_in_the_server(
    port: int, model: FakeOpenAI, shop: Agent, owner: Any
) -> None:
    model.script(*pause_turns(), Turn(text=["Refunded."]))
    with client(port, owner) as http:
        paused = process(http, shop, PROCESS_ASK)
        run_id = paused.headers["X-Run-Id"]
        [asking] = [m for m in paused.json()["output"] if m["type"] == "mcp_approval_request"]
        request_id = asking["content"][0]["data"]["approval_request_id"]
        answer = {"input": [approval_response(request_id, True)], "background": True}
        accepted = process(http, shop, answer)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["status"] == "in_progress"
        assert accepted.headers["X-Run-Id"] == run_id
        assert accepted.headers["Location"].endswith(f"/runs/{run_id}")
        followed = [
            json.loads(line) for line in http.get(f"/runs/{run_id}/events").text.splitlines()
        ]
        assert process(http, shop, answer).status_code == 409  # decided already
    assert followed[-1]["type"] == "response.completed"  # followed to its end
    assert Run.objects.get(pk=run_id).status == "completed"
    assert ran == {"look_up_order": 1, "refund_order": 1}
    assert len(model.bodies) == 2
