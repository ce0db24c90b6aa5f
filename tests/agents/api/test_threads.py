"""Threads (docs/api.md#threads): earlier turns load before the new messages; isolation."""

from __future__ import annotations

import pytest

from agents.access.permissions import Action, grant
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.fakes.server import Turn
from tests.support.backends import Backend
from tests.support.native import invoke

pytestmark = pytest.mark.usefixtures("db")


def say(text: str, thread: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}], "threadId": thread}


@pytest.fixture
def chat(make_agent, fake_backend: Backend):
    config = fake_backend.config(
        {
            "llmModelId": "local.demo-v1",
            "tools": [
                {
                    "toolType": "function",
                    "name": "multiply",
                    "description": "x",
                    "funcName": "multiply",
                }
            ],
        }
    )
    return make_agent("Chat", "tool", config=config)


def test_three_turns_see_the_earlier_ones(owner_client, chat, fake_backend: Backend):
    fake_backend.script(Turn(text=["Hi Ann."]), Turn(text=["You are Ann."]), Turn(text=["Bye."]))
    for text in ("I am Ann.", "Who am I?", "Thanks."):
        answer = invoke(owner_client, chat, "invoke", say(text, "t-1"))
        assert answer.status == 200

    # The third model call saw both earlier turns, in order, then the new message.
    seen = [(m["role"], _text(m)) for m in fake_backend.body(2)["messages"]]
    assert seen == [
        ("user", "I am Ann."),
        ("assistant", "Hi Ann."),
        ("user", "Who am I?"),
        ("assistant", "You are Ann."),
        ("user", "Thanks."),
    ]
    thread = owner_client.get("/v1/threads/t-1").json()
    assert [r["status"] for r in thread["runs"]] == ["completed"] * 3
    assert [m["content"] for m in thread["messages"] if m["role"] == "user"] == [
        "I am Ann.",
        "Who am I?",
        "Thanks.",
    ]
    runs = owner_client.get("/v1/runs", {"threadId": "t-1"}).json()["runs"]
    assert len(runs) == 3


def test_without_a_thread_each_call_stands_alone(owner_client, chat, fake_backend: Backend):
    fake_backend.script(Turn(text=["One."]), Turn(text=["Two."]))
    invoke(owner_client, chat, "invoke", {"messages": [{"role": "user", "content": "a"}]})
    invoke(owner_client, chat, "invoke", {"messages": [{"role": "user", "content": "b"}]})
    assert len(fake_backend.body(1)["messages"]) == 1


def test_a_thread_is_invisible_from_another_environment_or_without_read(
    owner_client, chat, fake_backend: Backend, other_env, env
):
    fake_backend.script(Turn(text=["Secret."]))
    invoke(owner_client, chat, "invoke", say("remember 42", "t-2"))

    outsider = UserFactory(username="outsider")
    grant(outsider, Action.READ, other_env)
    assert client_for(outsider, other_env).get("/v1/threads/t-2").status_code == 404
    stranger = UserFactory(username="nobody")
    assert client_for(stranger).get("/v1/threads/t-2").status_code == 404
    assert client_for(outsider).get("/v1/threads/t-2").status_code == 404

    # READ on the environment does not open another caller's thread (docs/api.md#threads) ...
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)
    assert client_for(reader).get("/v1/threads/t-2").status_code == 404
    # ... AUDIT does, naming whose thread.
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, env)
    owner_id = chat.runs.get().caller_id
    assert client_for(auditor).get("/v1/threads/t-2").status_code == 404  # its own: none
    audited = client_for(auditor).get("/v1/threads/t-2", {"callerId": owner_id})
    assert audited.status_code == 200
    assert audited.json()["messages"][0]["content"] == "remember 42"


def test_a_thread_only_loads_turns_with_the_same_agent(
    owner_client, make_agent, chat, fake_backend: Backend
):
    other = make_agent("Other", "tool", config=fake_backend.config(chat.versions.get().config))
    fake_backend.script(Turn(text=["A."]), Turn(text=["B."]))
    invoke(owner_client, chat, "invoke", say("first", "shared"))
    invoke(owner_client, other, "invoke", say("second", "shared"))
    assert [_text(m) for m in fake_backend.body(1)["messages"]] == ["second"]


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content or []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))
