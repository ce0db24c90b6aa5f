"""Retrieval behind the invoke routes: a corpus of three documents ingested in process, a RAG
agent and its tool, and the customOutputs of an answer checked against docs/api.md#rag-outputs."""

from typing import Any

import pytest

from agents.models import Agent, Environment
from retrieval.models import Document
from retrieval.services import document_create
from tests.support.backends import Backend
from tests.support.native import (
    RAG_OUTPUTS,
    RESPONSE_OBJECT,
    Answer,
    check,
)

HANDBOOK = (
    "Employee Handbook\n\n"
    "Vacation policy. Every full-time employee earns 25 days of paid vacation per year. "
    "Vacation requests go to your manager at least two weeks in advance. Up to five unused "
    "vacation days carry over into the next year.\n\n"
    "Working hours. The core hours are 10:00 to 16:00; the rest of the day is flexible."
)
EXPENSES = (
    "Expense Policy\n\n"
    "Employees are reimbursed for travel, meals and lodging on company business. Submit "
    "every expense report within 30 days, with receipts for any amount over 25 euros. Meals "
    "are capped at 60 euros a day."
)
FAQ = (
    "Product FAQ\n\n"
    "How do I reset my password? Open Settings, choose Security and click Reset password. "
    "Which browsers are supported? The latest versions of Chrome, Firefox, Safari and Edge. "
    "Can I export my data? Yes, as CSV or JSON from the Export page."
)
CORPUS = {
    "handbook": ("Employee Handbook", HANDBOOK, "handbook", {"department": "HR"}),
    "expenses": ("Expense Policy", EXPENSES, "policy", {"department": "Finance"}),
    "faq": ("Product FAQ", FAQ, "faq", {"department": "Support"}),
}


VACATION_QUESTION = "What is our vacation policy?"
VACATION = {"messages": [{"role": "user", "content": VACATION_QUESTION}]}


RAG_TOOL: dict[str, Any] = {
    "toolType": "rag",
    "name": "search_documents",
    "description": "Searches the company documents and policies",
    "funcName": "semantic_search",
    "semanticSearchConfig": {"rerankerTopN": 2},
}


def upload(env: Environment, user: Any, title: str, text: str, **fields: Any) -> Document:
    return document_create(
        environment_id=env.pk,
        user=user,
        title=title,
        data=text.encode(),
        media_type="text/plain",
        **fields,
    )


@pytest.fixture
def corpus(env: Environment, admin_user: Any, django_capture_on_commit_callbacks: Any) -> Any:
    """The three documents of the default environment, ingested (on commit, in-process)."""
    with django_capture_on_commit_callbacks(execute=True):
        docs = {
            key: upload(env, admin_user, title, text, doc_type=doc_type, metadata=metadata)
            for key, (title, text, doc_type, metadata) in CORPUS.items()
        }
    for document in docs.values():
        document.refresh_from_db()
        assert document.status == "ready", document.error
    return docs


def rag_agent(make_agent: Any, backend: Backend | None = None, **config: Any) -> Agent:
    # minScore 0: these agents show how retrieval's settings reach the sources, every
    # document of the corpus included; the threshold's own tests are tests/retrieval/test_rag.py.
    base = {"llmModelId": "local.demo-v1", "minScore": 0.0, **config}
    return make_agent("document-helper", "rag", config=backend.config(base) if backend else base)


def outputs(answer: Answer) -> dict[str, Any]:
    """customOutputs of the body or of the stream's completed line, checked against
    docs/api.md#rag-outputs."""
    assert answer.status == 200, answer.body
    if answer.streamed:
        found = answer.lines[-1]["response"].get("customOutputs")
    else:
        check(answer.body, RESPONSE_OBJECT)
        found = answer.body.get("customOutputs")
    assert found is not None, "a RAG answer carries customOutputs"
    check(found, RAG_OUTPUTS)
    return found
