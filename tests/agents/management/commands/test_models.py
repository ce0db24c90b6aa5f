"""`manage.py models add` / `models list`: a model an OpenAI-compatible server serves under a
name the catalog lacks (Ollama's llama3.2) is one command away from an agent that uses it."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from agents.examples import CALCULATOR
from agents.models import AuditRecord, LLMModel
from tests.conftest import client_for
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.support.backends import openai_server  # noqa: F401 (a fixture)


def models(*args: str) -> str:
    out = io.StringIO()
    call_command("models", *args, stdout=out)
    return out.getvalue()


def test_an_ollama_model_added_by_the_command_serves_an_agent(
    make_agent: Any,
    admin_user: Any,
    openai_server: FakeOpenAI,  # noqa: F811 (a fixture)
    settings: Any,
) -> None:
    settings.LLM_OFFLINE = False
    openai_server.reset()
    config = {**CALCULATOR["config"], "llmModelId": "openai/llama3.2"}
    refused = client_for(admin_user).post(
        "/v1/agents",
        {"name": "early", "agentType": "tool", "config": config},
        format="json",
    )
    assert refused.status_code == 400
    assert refused.json()["detail"][0]["loc"] == ["body", "config", "llmModelId"]

    out = models("add", "openai/llama3.2")

    assert out == "added openai/llama3.2 (openai)\n"
    agent = make_agent("local-llama", "tool", config=config)
    openai_server.script(Turn(text=["Hello from llama."]))
    answer = client_for(admin_user).post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "hi"}]},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert openai_server.bodies[0]["model"] == "llama3.2"
    assert "openai/llama3.2\topenai\tllama3.2 (OpenAI-compatible)" in models("list")
    openai_server.reset()


def test_adding_twice_changes_nothing_and_a_disabled_model_is_enabled(db: Any) -> None:
    models("add", "openai/qwen2.5", "--name", "Qwen 2.5")
    assert models("add", "openai/qwen2.5") == "already in the catalog: openai/qwen2.5 (openai)\n"
    LLMModel.objects.filter(pk="openai/qwen2.5").update(enabled=False)

    models("add", "openai/qwen2.5")

    model = LLMModel.objects.get(pk="openai/qwen2.5")
    assert (model.name, model.enabled) == ("Qwen 2.5", True)
    records = AuditRecord.objects.filter(object_id="openai/qwen2.5").order_by("at")
    assert [(r.action, r.surface) for r in records] == [("create", "other"), ("update", "other")]
    assert records[1].changes == {"enabled": {"from": False, "to": True}}


def test_a_bedrock_id_is_served_by_bedrock(db: Any) -> None:
    models("add", "us.anthropic.claude-3-5-haiku-20241022-v1:0")

    assert LLMModel.objects.get(pk="us.anthropic.claude-3-5-haiku-20241022-v1:0").provider == (
        "bedrock"
    )


@pytest.mark.parametrize("model_id", ["openai/", "openai/two words"])
def test_a_bad_id_is_refused_and_nothing_is_added(db: Any, model_id: str) -> None:
    before = LLMModel.objects.count()

    with pytest.raises(CommandError, match="no spaces"):
        models("add", model_id)

    assert LLMModel.objects.count() == before
