"""Privacy between callers of one agent (docs/api.md#runs): threads and runs belong to their
caller, AUDIT reads everyone's, and INVOKE alone invokes without reading the config."""

from __future__ import annotations

from typing import Any

import pytest

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import Agent, Run
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.fakes.server import Turn
from tests.support.backends import Backend
from tests.support.native import invoke

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}


def say(text: str, thread: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "threadId": thread}


def texts(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body["messages"]:
        if message.get("role") == "system":  # OpenAI's system prompt: the agent's own
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append(content)
    return out


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


@pytest.fixture
def colleague(env: Any) -> Any:
    """Another caller with READ and INVOKE on the whole environment, and nothing more."""
    user = UserFactory(username="colleague")
    grant(user, Action.READ, env)
    grant(user, Action.INVOKE, env)
    return user


def test_the_same_thread_id_from_another_caller_is_another_thread(
    owner_client: Any, colleague: Any, make_agent: Any, fake_backend: Backend
) -> None:
    chat = make_agent("Chat", "tool", config=fake_backend.config(CALCULATOR["config"]))
    fake_backend.script(Turn(text=["Noted."]), Turn(text=["I know nothing."]), Turn(text=["Ok."]))
    intruder = client_for(colleague)

    invoke(owner_client, chat, "invoke", say("my password is hunter2", "t-1"))
    invoke(intruder, chat, "invoke", say("repeat what I told you", "t-1"))
    invoke(owner_client, chat, "invoke", say("thanks", "t-1"))

    # The intruder's model call saw only the intruder's words ...
    assert texts(fake_backend.body(1)) == ["repeat what I told you"]
    # ... the owner's thread goes on without the intruder's turn ...
    assert texts(fake_backend.body(2)) == ["my password is hunter2", "Noted.", "thanks"]
    owners = owner_client.get("/v1/threads/t-1").json()
    assert [m["content"] for m in owners["messages"] if m["role"] == "user"] == [
        "my password is hunter2",
        "thanks",
    ]
    # ... and the intruder's thread of that id is its own one turn.
    theirs = intruder.get("/v1/threads/t-1").json()
    assert [m["content"] for m in theirs["messages"] if m["role"] == "user"] == [
        "repeat what I told you"
    ]


def test_runs_belong_to_their_caller_and_audit_reads_everyones(
    owner: Any, owner_client: Any, colleague: Any, calculator: Agent, env: Any, admin_user: Any
) -> None:
    own = invoke(owner_client, calculator, "invoke", ASK).run_id
    other = invoke(client_for(colleague), calculator, "invoke", ASK).run_id
    colleague_client = client_for(colleague)

    assert colleague_client.get(f"/v1/runs/{own}").status_code == 404
    assert [r["id"] for r in colleague_client.get("/v1/runs").json()["runs"]] == [other]
    assert colleague_client.get(f"/v1/runs/{other}").json()["callerId"] == colleague.pk

    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, calculator)
    auditing = client_for(auditor)
    assert {r["id"] for r in auditing.get("/v1/runs").json()["runs"]} == {own, other}
    assert auditing.get(f"/v1/runs/{own}").status_code == 200
    only = auditing.get("/v1/runs", {"callerId": colleague.pk}).json()["runs"]
    assert [r["id"] for r in only] == [other]
    # A superuser audits everything.
    assert len(client_for(admin_user).get("/v1/runs").json()["runs"]) == 2


def test_invoke_alone_invokes_and_reads_its_own_runs_but_not_the_config(
    owner_client: Any, calculator: Agent
) -> None:
    service = UserFactory(username="service")
    grant(service, Action.INVOKE, calculator)
    client = client_for(service)
    version = f"/v1/agents/{calculator.pk}/versions/latest"

    answer = invoke(client, calculator, "invoke", ASK)
    streamed = invoke(client, calculator, "invoke-stream", ASK)
    by_name = client.post(
        "/v1/chat/completions", {"model": "calculator", "messages": ASK["messages"]}, format="json"
    )
    respond = client.post(f"{version}/respond", ASK, format="json")

    assert answer.status == 200
    assert "15" in answer.final_text
    assert streamed.status == 200
    assert by_name.status_code == 200, by_name.json()
    assert respond.status_code == 200, respond.json()
    # The config stays unread: agent and version routes are 404, the list leaves it out.
    assert client.get(f"/v1/agents/{calculator.pk}").status_code == 404
    assert client.get(version).status_code == 404
    assert client.get(f"/v1/agents/{calculator.pk}/versions").status_code == 404
    assert client.get("/v1/agents").json()["agents"] == []
    # Its own runs, and only those.
    invoke(owner_client, calculator, "invoke", ASK)
    runs = client.get("/v1/runs").json()["runs"]
    assert len(runs) == 4
    assert {r["callerId"] for r in runs} == {service.pk}
    assert client.get(f"/v1/runs/{answer.run_id}").status_code == 200
    assert Run.objects.count() == 5


def test_read_alone_may_not_invoke(calculator: Agent) -> None:
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, calculator)

    answer = invoke(client_for(reader), calculator, "invoke", ASK)

    assert answer.status == 403
    assert not Run.objects.exists()
