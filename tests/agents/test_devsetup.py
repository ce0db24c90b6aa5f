"""`manage.py devsetup` (what `make run` runs): idempotent, and what it creates works: the
sample documents are ready and `document-helper` answers from them."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from agents.examples import AWS_VARIABLES, DOCUMENT_HELPER
from agents.examples import DEV_EXAMPLES as EXAMPLES
from agents.management.commands.devsetup import SAMPLES, SAMPLES_DIR
from agents.models import Agent, AgentVersion, AuditRecord, Environment, LLMModel
from retrieval.models import Chunk, Document
from tests.conftest import client_for
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.support.backends import bedrock_server, openai_server  # noqa: F401 (fixtures)

VACATION = {"messages": [{"role": "user", "content": "What is our vacation policy?"}]}


def devsetup() -> str:
    out = io.StringIO()
    call_command("devsetup", stdout=out, stderr=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {
        "users": get_user_model().objects.count(),
        "environments": Environment.objects.count(),
        "agents": Agent.objects.count(),
        "versions": AgentVersion.objects.count(),
        "documents": Document.objects.count(),
        "chunks": Chunk.objects.count(),
    }


def default_env() -> Environment:
    return Environment.objects.get(name="default")


@pytest.mark.parametrize("on_commit", [False, True], ids=["in-transaction", "on-commit"])
def test_devsetup_twice_creates_everything_once(
    db: Any, django_capture_on_commit_callbacks: Any, on_commit: bool
) -> None:
    # Outside a test's transaction the upload's on-commit ingestion runs (eagerly, with no
    # broker); inside one it never does and the command must ingest by itself.
    if on_commit:
        with django_capture_on_commit_callbacks(execute=True):
            first = devsetup()
    else:
        first = devsetup()
    after_first = counts()

    second = devsetup()

    assert second == "", second
    assert counts() == after_first
    for name in [e["name"] for e in EXAMPLES] + ["document-helper"]:
        assert f"agent '{name}'" in first
    for sample in SAMPLES:
        assert f"created sample document '{sample.title}'" in first
    assert "failed" not in first
    env = default_env()
    assert Agent.objects.filter(environment=env, name="document-helper").count() == 1
    documents = Document.objects.filter(environment=env)
    assert sorted(d.title for d in documents) == sorted(s.title for s in SAMPLES)
    for sample in SAMPLES:
        document = documents.get(title=sample.title)
        assert document.status == "ready", document.error
        assert (document.doc_type, document.metadata) == (sample.doc_type, sample.metadata)
        assert document.media_type == "text/markdown"
        assert bytes(document.source) == (SAMPLES_DIR / sample.file).read_bytes()
        assert document.chunks.exists()


@pytest.mark.parametrize(
    ("question", "tool", "arguments", "result"),
    [
        ("What is 12 times 11?", "multiply", {"a": 12, "b": 11}, "132"),
        ("What is 2 plus 3?", "add", {"a": 2, "b": 3}, "5"),
        ("subtract 3 from 10", "subtract", {"a": 10, "b": 3}, "7"),
        ("10 divided by 4", "divide", {"a": 10, "b": 4}, "2.5"),
        ("What is seven times six?", "multiply", {"a": 7, "b": 6}, "42"),
    ],
)
def test_the_calculator_of_make_run_answers_a_newcomers_arithmetic_with_its_tools(
    db: Any, question: str, tool: str, arguments: dict[str, int], result: str
) -> None:
    devsetup()
    admin = get_user_model().objects.get(username=settings.ADMIN_USERNAME)
    calculator = Agent.objects.get(environment=default_env(), name="Calculator")
    body = {"messages": [{"role": "user", "content": question}]}

    response = client_for(admin).post(
        f"/v1/agents/{calculator.pk}/versions/latest/invoke", body, format="json"
    )

    assert response.status_code == 200, response.content
    call, message = response.json()["output"]
    assert (call["name"], json.loads(call["arguments"])) == (tool, arguments)
    assert result in message["content"][0]["text"]


def test_document_helper_answers_the_vacation_question_from_the_handbook(db: Any) -> None:
    devsetup()
    admin = get_user_model().objects.get(username=settings.ADMIN_USERNAME)
    helper = Agent.objects.get(environment=default_env(), name="document-helper")
    assert helper.agent_type == "rag"
    assert helper.versions.get().config["llmModelId"] == DOCUMENT_HELPER["config"]["llmModelId"]
    handbook = Document.objects.get(environment=default_env(), title="Employee Handbook")
    client = client_for(admin)

    response = client.post(
        f"/v1/agents/{helper.pk}/versions/latest/invoke", VACATION, format="json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    answer = body["output"][-1]["content"][0]["text"]
    assert "25 days of paid vacation" in answer
    sources = body["customOutputs"]["sourceNodes"]
    assert body["customOutputs"]["ragMode"] == "normal"
    assert sources[0]["docId"] == str(handbook.pk)
    assert "Vacation policy" in sources[0]["text"]
    assert len(sources) <= DOCUMENT_HELPER["config"]["rerankerTopN"]


def test_devsetup_reingests_a_sample_that_did_not_get_ready(db: Any) -> None:
    devsetup()
    handbook = Document.objects.get(environment=default_env(), title="Employee Handbook")
    Chunk.objects.filter(document=handbook).delete()
    Document.objects.filter(pk=handbook.pk).update(status="failed", error="worker died")
    before = counts()

    out = devsetup()

    assert out == ""
    handbook.refresh_from_db()
    assert (handbook.status, handbook.error) == ("ready", "")
    assert handbook.chunks.exists()
    assert Document.objects.count() == before["documents"]


def test_devsetup_leaves_an_edited_document_helper_alone(db: Any) -> None:
    devsetup()
    helper = Agent.objects.get(environment=default_env(), name="document-helper")
    Agent.objects.filter(pk=helper.pk).update(name="Document-Helper")

    devsetup()

    # Names are unique ignoring case: the renamed agent is still "the" document-helper.
    assert Agent.objects.filter(name__iexact="document-helper").count() == 1


# ---------------------------------------------------------------- the provider configured

SAMPLE_NAMES = [*(e["name"] for e in EXAMPLES), "document-helper"]


@pytest.fixture
def only_openai(
    openai_server: FakeOpenAI,  # noqa: F811 (a fixture)
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> Iterator[FakeOpenAI]:
    """`LLM_OFFLINE=false` with OPENAI_BASE_URL (the fake, on loopback) and OPENAI_API_KEY
    set, and no AWS variable: what the issue's newcomer ran `make run` with."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    settings.LLM_OFFLINE = False
    openai_server.reset()
    yield openai_server
    openai_server.reset()


def sample_models() -> dict[str, str]:
    return {
        name: Agent.objects.get(environment=default_env(), name=name)
        .versions.order_by("-number")
        .first()
        .config["llmModelId"]
        for name in SAMPLE_NAMES
    }


def ask_every_sample(fake: FakeOpenAI | FakeBedrock) -> list[Any]:
    """Each sample asked once, the fake answering as its model would; the answers."""
    admin = get_user_model().objects.get(username=settings.ADMIN_USERNAME)
    client = client_for(admin)
    fake.script(
        Turn(calls=[Call("add", {"a": 2, "b": 3})]),
        Turn(text=["2 plus 3 is 5."]),
        Turn(calls=[Call("structured_output", {"name": "Ada Lovelace", "age": 36})]),
        Turn(text=["You get 25 days of paid vacation."]),
    )
    questions = {
        "Calculator": "What is 2 plus 3?",
        "PersonExtractor": "Ada Lovelace, 36, wrote the first program.",
        "document-helper": "What is our vacation policy?",
    }
    answers = []
    for name, question in questions.items():
        agent = Agent.objects.get(environment=default_env(), name=name)
        body = {"messages": [{"role": "user", "content": question}]}
        answers.append(
            client.post(f"/v1/agents/{agent.pk}/versions/latest/invoke", body, format="json")
        )
    return answers


def test_with_only_openai_set_the_samples_answer_through_the_openai_server(
    db: Any, only_openai: FakeOpenAI
) -> None:
    out = devsetup()

    assert set(sample_models().values()) == {"openai/gpt-4o-mini"}, out
    calculator, person, helper = ask_every_sample(only_openai)
    assert calculator.status_code == 200, calculator.content
    assert "5" in calculator.json()["output"][-1]["content"][0]["text"]
    assert person.status_code == 200, person.content
    assert person.json() == {"name": "Ada Lovelace", "age": 36}
    assert helper.status_code == 200, helper.content
    assert "25 days" in helper.json()["output"][-1]["content"][0]["text"]
    chats = [b for b in only_openai.bodies if isinstance(b, dict) and "messages" in b]
    assert len(chats) == 4
    assert {b["model"] for b in chats} == {"gpt-4o-mini"}


def test_openai_models_join_the_catalog_and_the_first_is_the_samples(
    db: Any, only_openai: FakeOpenAI, settings: Any
) -> None:
    settings.OPENAI_MODELS = ["llama3.2", "qwen2.5"]

    out = devsetup()

    assert "added model 'openai/llama3.2' to the catalog" in out
    added = LLMModel.objects.get(pk="openai/qwen2.5")
    assert (added.provider, added.enabled) == ("openai", True)
    assert sorted(added.agent_types) == ["rag", "task", "tool"]
    assert set(sample_models().values()) == {"openai/llama3.2"}
    record = AuditRecord.objects.get(object_type="llmmodel", object_id="openai/llama3.2")
    assert (record.action, record.environment_id) == ("create", None)
    calculator, *_ = ask_every_sample(only_openai)
    assert calculator.status_code == 200, calculator.content
    assert only_openai.bodies[0]["model"] == "llama3.2"
    assert devsetup() == ""


def test_samples_made_offline_follow_the_provider_when_run_again_unless_edited(
    db: Any, only_openai: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_OFFLINE = True
    devsetup()
    person = Agent.objects.get(environment=default_env(), name="PersonExtractor")
    client_for(get_user_model().objects.get(username=settings.ADMIN_USERNAME)).post(
        f"/v1/agents/{person.pk}/versions",
        {"config": {**person.versions.get().config, "systemPrompt": "Mine now."}},
        format="json",
    )
    settings.LLM_OFFLINE = False

    out = devsetup()

    models = sample_models()
    assert models["Calculator"] == models["document-helper"] == "openai/gpt-4o-mini"
    assert "example agent 'Calculator' now uses 'openai/gpt-4o-mini' (version 2)" in out
    # An edited sample is the user's: its model is theirs to change.
    assert models["PersonExtractor"] == EXAMPLES[1]["config"]["llmModelId"]
    assert devsetup() == ""


def test_with_only_aws_set_the_samples_answer_through_bedrock(
    db: Any,
    bedrock_server: FakeBedrock,  # noqa: F811 (a fixture)
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings.LLM_OFFLINE = False
    bedrock_server.reset()

    devsetup()

    expected = {e["name"]: e["config"]["llmModelId"] for e in [*EXAMPLES, DOCUMENT_HELPER]}
    assert sample_models() == expected
    answers = ask_every_sample(bedrock_server)
    assert [a.status_code for a in answers] == [200, 200, 200], answers[-1].content
    bedrock_server.reset()


def test_a_default_model_outside_the_catalog_is_named_with_the_command_that_adds_it(
    db: Any, settings: Any
) -> None:
    settings.DEFAULT_MODEL = "openai/llama3.2"

    with pytest.raises(CommandError, match=re.escape("manage.py models add openai/llama3.2")):
        devsetup()
