"""The OpenAI-compatible base `/v1/openai` (docs/api.md#openai): the official `openai` SDK,
unmodified, with `base_url=".../v1/openai"`, against a live uvicorn."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from agents.access.permissions import Action, grant
from agents.access.tokens import token_encode
from agents.examples import CALCULATOR
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, Run
from tests.factories import CONFIGS, UserFactory
from tests.live import django_port  # noqa: F401 (the fixture `port`)

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
ASK = [{"role": "user", "content": "What is 3 x 5?"}]


def sdk(port: int, user: Any, environment: Any = None) -> OpenAI:
    token = token_encode(
        user_id=user.pk, environment_id=str(environment.pk) if environment else None
    )
    return OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1/openai", api_key=token[0], max_retries=0, timeout=20
    )


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


@LIVE
def test_models_list_is_the_agents_the_caller_may_invoke(
    port: int, owner: Any, calculator: Agent, make_agent: Any, other_env: Any
) -> None:
    greeter = make_agent("greeter", "task", config=CONFIGS["task"])
    make_agent("elsewhere", environment=other_env)  # another environment: never listed
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, calculator)  # READ alone does not make a model
    invoker = UserFactory(username="invoker")
    grant(invoker, Action.READ, greeter)
    grant(invoker, Action.INVOKE, greeter)

    listed = sdk(port, owner).models.list()

    assert [m.id for m in listed.data] == ["Calculator", "greeter"]
    for model in listed.data:
        assert model.object == "model"
        assert model.owned_by == "default"
    assert listed.data[0].created == int(calculator.created_at.timestamp())
    assert [m.id for m in sdk(port, invoker).models.list().data] == ["greeter"]
    assert sdk(port, reader).models.list().data == []


@LIVE
def test_a_model_is_retrieved_by_name_and_an_unknown_one_is_openais_404(
    port: int, owner: Any, calculator: Agent
) -> None:
    client = sdk(port, owner)

    assert client.models.retrieve("calculator").id == "Calculator"
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("calculatr")
    assert missing.value.code == "model_not_found"
    assert missing.value.type == "invalid_request_error"


def test_a_model_id_with_a_slash_is_openais_404_too(owner_client: Any) -> None:
    """OpenAI's own ids hold slashes (`openai/gpt-4o-mini`): the route takes them, and
    answers as OpenAI does, not with the API's 404 of a path no route matches."""
    missing = owner_client.get("/v1/openai/models/openai/gpt-4o-mini")

    assert missing.status_code == 404
    error = missing.json()["error"]
    assert (error["code"], error["type"]) == ("model_not_found", "invalid_request_error")
    assert "'openai/gpt-4o-mini'" in error["message"]


@LIVE
def test_a_chat_completion_through_the_base_names_the_agent_that_answered(
    port: int, owner: Any, calculator: Agent
) -> None:
    client = sdk(port, owner)
    model = client.models.list().data[0].id

    raw = client.chat.completions.with_raw_response.create(model=model, messages=ASK)
    completion = raw.parse()

    assert completion.model == "Calculator@1"
    assert completion.llm_model == LOCAL_MODEL  # type: ignore[attr-defined]
    assert "15" in (completion.choices[0].message.content or "")
    run = Run.objects.get(pk=raw.headers["x-run-id"])
    assert (run.agent_id, run.protocol) == (calculator.pk, "chat.completions")

    chunks = list(client.chat.completions.create(model="calculator@1", messages=ASK, stream=True))
    assert {c.model for c in chunks} == {"Calculator@1"}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "15" in text


@LIVE
def test_a_bad_token_is_openais_authentication_error(port: int, owner: Any) -> None:
    client = OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1/openai", api_key="nope", max_retries=0, timeout=20
    )
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.code == "invalid_api_key"
