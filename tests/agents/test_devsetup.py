"""`manage.py devsetup` (what `make run` runs): idempotent, and what it creates works: the
sample documents are ready and `document-helper` answers from them."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.examples import DEV_EXAMPLES as EXAMPLES
from agents.examples import DOCUMENT_HELPER
from agents.management.commands.devsetup import SAMPLES, SAMPLES_DIR
from agents.models import Agent, AgentVersion, Environment
from retrieval.models import Chunk, Document
from tests.conftest import client_for

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
