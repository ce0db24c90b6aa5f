"""Refusals before the first byte (docs/api.md#errors, #invocation): status codes and error bodies,
never a 500, and never a run left in progress."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agents.access.permissions import Action, grant
from agents.models import Agent, Run
from tests.conftest import client_for
from tests.factories import TASK_CONFIG, UserFactory
from tests.support.native import REVIEW_TASK, Answer, invoke, no_run_in_progress

CHAT_ROUTES = pytest.mark.parametrize("route", ["invoke", "invoke-stream"])
TASK_ROUTES = pytest.mark.parametrize("route", ["invoke-task", "invoke-task-stream"])
ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}


def validation_items(answer: Answer) -> list[dict[str, Any]]:
    """The items of a validation error (docs/api.md#errors), each checked for its shape."""
    assert answer.status == 400, answer.body
    assert set(answer.body) == {"detail"}
    items = answer.body["detail"]
    assert isinstance(items, list)
    assert items
    for item in items:
        assert set(item) == {"loc", "msg", "type"}
        assert isinstance(item["msg"], str)
        assert item["msg"]
    return items


def failed_run_named(answer: Answer, agent: Agent) -> Run:
    """A refusal after the run opened: the run is failed, and the answer names it."""
    [run] = Run.objects.filter(agent=agent)
    assert run.status == "failed"
    assert run.error is not None
    assert run.completed_at is not None
    # docs/api.md#invocation: every answer carries X-Run-Id.
    assert answer.headers.get("X-Run-Id") == str(run.pk)
    return run


def refused_without_run(answer: Answer) -> None:
    """A refusal before any run: nothing in progress, and any run it names has failed."""
    no_run_in_progress()
    if "X-Run-Id" in answer.headers:
        assert Run.objects.get(pk=answer.headers["X-Run-Id"]).status == "failed"


# ---------------------------------------------------------------- the route and the agent


@CHAT_ROUTES
def test_task_agent_is_refused_on_invoke(route: str, owner_client: Any, make_agent: Any) -> None:
    agent = make_agent("Summariser", "task")

    answer = invoke(owner_client, agent, route, ASK)

    assert answer.status == 400
    assert answer.body == {
        "detail": "Agent type task not supported in /invoke or /invoke-stream endpoints."
        " Call a task agent with POST .../invoke-task (or /invoke-task-stream) and its `inputs`."
    }
    no_run_in_progress()
    failed_run_named(answer, agent)


@TASK_ROUTES
def test_tool_agent_is_refused_on_invoke_task(
    route: str, owner_client: Any, make_agent: Any
) -> None:
    agent = make_agent("Calculator")

    answer = invoke(owner_client, agent, route, {"inputs": {"text": "hi"}})

    assert answer.status == 400
    assert answer.body == {
        "detail": "Agent type tool not supported in /invoke-task or /invoke-task-stream endpoints."
        " Call it with POST .../invoke (or /invoke-stream) and `messages`."
    }
    no_run_in_progress()
    failed_run_named(answer, agent)


@CHAT_ROUTES
def test_unknown_agent_and_version_are_404(route: str, owner_client: Any, make_agent: Any) -> None:
    agent = make_agent("Calculator")
    url = "/v1/agents/{}/versions/{}/" + route

    for path in (url.format(uuid.uuid4(), "latest"), url.format(agent.pk, 7)):
        got = owner_client.post(path, ASK, format="json")
        assert got.status_code == 404, got.json()
        assert set(got.json()) == {"detail"}
    bad = owner_client.post(url.format("calc", "latest"), ASK, format="json")
    assert bad.status_code == 400
    assert [i["loc"] for i in bad.json()["detail"]] == [["path", "agentId"]]
    no_run_in_progress()
    assert not Run.objects.exists()


# ---------------------------------------------------------------- task inputs


@TASK_ROUTES
def test_bad_inputs_list_every_violation(route: str, owner_client: Any, make_agent: Any) -> None:
    agent = make_agent("ReviewRater", "task", config=REVIEW_TASK)

    answer = invoke(owner_client, agent, route, {"inputs": {"product": 5, "stars": 9}})

    items = validation_items(answer)
    by_loc = {tuple(item["loc"]): item["msg"] for item in items}
    # A missing required input is located at itself, so a form can mark its field.
    assert set(by_loc) == {
        ("body", "inputs", "product"),
        ("body", "inputs", "review"),
        ("body", "inputs", "stars"),
    }
    assert by_loc[("body", "inputs", "review")] == "'review' is a required property"
    no_run_in_progress()
    failed_run_named(answer, agent)


@TASK_ROUTES
@pytest.mark.parametrize("inputs", [[1, 2], "text", None], ids=["list", "string", "null"])
def test_inputs_must_be_an_object(
    route: str, inputs: Any, owner_client: Any, make_agent: Any
) -> None:
    agent = make_agent("ReviewRater", "task", config=REVIEW_TASK)

    answer = invoke(owner_client, agent, route, {"inputs": inputs})

    assert [item["loc"][:2] for item in validation_items(answer)] == [["body", "inputs"]]
    refused_without_run(answer)


@TASK_ROUTES
def test_missing_template_variable_is_refused(
    route: str, owner_client: Any, make_agent: Any
) -> None:
    # `audience` is declared but optional, and the prompt uses it.
    agent = make_agent("Summariser", "task", config=TASK_CONFIG)

    answer = invoke(owner_client, agent, route, {"inputs": {"text": "Kettles boil water."}})

    [item] = validation_items(answer)
    assert item["loc"][:2] == ["body", "inputs"]
    assert "audience" in item["msg"]
    no_run_in_progress()
    failed_run_named(answer, agent)


# ---------------------------------------------------------------- messages


MALFORMED = {
    "bad role": (
        {"messages": [{"role": "robot", "content": "hi"}]},
        {("body", "messages", 0, "role")},
    ),
    "content a number": (
        {"messages": [{"role": "user", "content": 42}]},
        {("body", "messages", 0, "content")},
    ),
    "content an object": (
        {"messages": [{"role": "user", "content": {"text": "hi"}}]},
        {("body", "messages", 0, "content")},
    ),
    "part of unknown type": (
        {"messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]},
        {("body", "messages", 0, "content"), ("body", "messages", 0, "content", 0, "type")},
    ),
    "text part without text": (
        {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
        {("body", "messages", 0, "content"), ("body", "messages", 0, "content", 0, "text")},
    ),
    "empty list": ({"messages": []}, {("body", "messages")}),
    "no messages": ({}, {("body", "messages")}),
    "messages not a list": ({"messages": "hi"}, {("body", "messages")}),
    "unknown field": ({**ASK, "temperature": 2}, {("body", "temperature")}),
}


@CHAT_ROUTES
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_messages_are_refused(
    route: str, case: str, owner_client: Any, make_agent: Any
) -> None:
    body, locs = MALFORMED[case]
    agent = make_agent("Calculator")

    answer = invoke(owner_client, agent, route, body)

    assert {tuple(item["loc"]) for item in validation_items(answer)} == locs
    refused_without_run(answer)


@CHAT_ROUTES
def test_every_part_type_of_spec_is_accepted(
    route: str, owner_client: Any, make_agent: Any
) -> None:
    parts = [
        {"type": "text", "text": "What is 3x5?"},
        {"type": "image", "source": {"type": "base64", "mediaType": "image/png", "data": "iVBO"}},
        {"type": "document", "name": "notes", "source": {"type": "text", "data": "3x5"}},
    ]
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": parts},
    ]

    answer = invoke(owner_client, make_agent("Calculator"), route, {"messages": history})

    assert answer.status == 200
    assert "15" in answer.text


# ---------------------------------------------------------------- guardrails


@CHAT_ROUTES
def test_unknown_guardrail_in_the_request_is_refused(
    route: str, owner_client: Any, make_agent: Any
) -> None:
    agent = make_agent("Calculator")

    answer = invoke(owner_client, agent, route, {**ASK, "guardrails": ["HAIP-Nope"]})

    [item] = validation_items(answer)
    assert item["loc"] == ["body", "guardrails", 0]
    assert "HAIP-Nope" in item["msg"]
    no_run_in_progress()
    failed_run_named(answer, agent)


@TASK_ROUTES
def test_unknown_guardrail_is_located_by_its_index(
    route: str, owner_client: Any, make_agent: Any
) -> None:
    agent = make_agent("ReviewRater", "task", config=REVIEW_TASK)
    body = {
        "inputs": {"product": "Acme kettle", "review": "Fine."},
        "guardrails": ["HAIP-Profanity", "Nope", "HAIP-Hate-High", "Nope-2"],
    }

    answer = invoke(owner_client, agent, route, body)

    assert [item["loc"] for item in validation_items(answer)] == [
        ["body", "guardrails", 1],
        ["body", "guardrails", 3],
    ]
    no_run_in_progress()
    failed_run_named(answer, agent)


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize("route", ["invoke", "invoke-stream", "invoke-task", "invoke-task-stream"])
def test_reader_without_invoke_gets_403_and_stranger_404(
    route: str, stranger: Any, make_agent: Any, env: Any
) -> None:
    agent = make_agent("Calculator") if "task" not in route else make_agent("Sum", "task")
    body = {"inputs": {"text": "x", "audience": "y"}} if "task" in route else ASK
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)

    forbidden = invoke(client_for(reader), agent, route, body)
    hidden = invoke(client_for(stranger), agent, route, body)

    assert forbidden.status == 403
    assert set(forbidden.body) == {"detail"}
    assert hidden.status == 404
    assert set(hidden.body) == {"detail"}
    assert not Run.objects.exists()
