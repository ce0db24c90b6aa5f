"""Any JSON a client can send the A2A endpoint is answered or refused, never a 500, and a
refusal leaves no run: the strategies of tests/test_hostile_input.py, as A2A params."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from agents.examples import CALCULATOR, SUMMARIZER
from agents.models import Run
from tests.conftest import client_for
from tests.support.hostile import ANY_TEXT, JSON_VALUES, PROPERTY

PART = st.one_of(
    st.fixed_dictionaries({"kind": st.just("text"), "text": ANY_TEXT}),
    st.fixed_dictionaries(
        {"kind": st.just("data"), "data": st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3)}
    ),
    st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3),
)
MESSAGE = st.fixed_dictionaries(
    {
        "kind": st.just("message"),
        "messageId": ANY_TEXT,
        "role": st.sampled_from(["user", "agent", "ROLE_USER"]) | ANY_TEXT,
        "parts": st.lists(PART, max_size=3),
    },
    optional={"contextId": ANY_TEXT, "taskId": ANY_TEXT, "metadata": JSON_VALUES},
)
SENDS = ("message/send", "SendMessage")
METHOD = st.sampled_from([*SENDS, "tasks/get", "GetTask", "CancelTask", "ListTasks"])
LISTING = st.dictionaries(
    st.sampled_from(["contextId", "status", "pageSize", "pageToken", "historyLength"]) | ANY_TEXT,
    JSON_VALUES,
    max_size=4,
)


@pytest.fixture
def client(owner: Any, make_agent: Any) -> APIClient:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    make_agent("summarizer", "task", config=SUMMARIZER["config"])
    return client_for(owner)


@pytest.mark.django_db
@PROPERTY
@given(
    method=METHOD,
    message=MESSAGE,
    task_id=ANY_TEXT,
    listing=LISTING,
    agent=st.sampled_from(["Calculator", "summarizer"]),
)
def test_any_params_are_answered_or_refused_never_a_500(
    client: APIClient,
    method: str,
    message: dict[str, Any],
    task_id: str,
    listing: dict[str, Any],
    agent: str,
) -> None:
    cache.clear()  # the per-user throttle counts every example
    runs = Run.objects.count()
    params = (
        {"message": message}
        if method in SENDS
        else listing
        if method == "ListTasks"
        else {"id": task_id}
    )
    raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})

    response = client.post(f"/v1/a2a/{agent}", raw, content_type="application/json")

    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert Run.objects.filter(status="in_progress").count() == 0
    recorded = Run.objects.count() - runs
    if "error" in body:
        assert body["error"]["code"] in (-32602, -32001, -32004, -32005), body
        # Only the run's own refusal (inputs against the inputSchema) is recorded, failed.
        assert recorded == ("taskId" in _error_data(body["error"])), body
    else:
        assert recorded == (method in SENDS)


def _error_data(error: dict[str, Any]) -> dict[str, Any]:
    """Our `data`: as it is (0.3), or the metadata of the SDK's ErrorInfo (1.0)."""
    data = error.get("data") or {}
    return data[0].get("metadata", {}) if isinstance(data, list) else data  # type: ignore[no-any-return]
