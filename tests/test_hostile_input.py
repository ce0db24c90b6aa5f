"""Input that PostgreSQL or Python cannot take as it comes (a NUL character, a lone UTF-16
surrogate, NaN, nesting past the interpreter's stack, a number past a double's range) is a
400 naming the field, never a 500, and leaves no row behind: no document, and no run (these
are refused while the body is read, before an invocation starts).

Then the same promise as a property, over arbitrary JSON bodies and form fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from agents.models import Agent, Run
from retrieval.models import Document
from tests.conftest import client_for
from tests.support.hostile import ANY_TEXT, JSON_VALUES, PROPERTY

JSON = "application/json"
QUESTION = {"role": "user", "content": "What is 3 times 5?"}
# The escape as a client sends it: json.dumps would write the same six characters.
LONE_SURROGATE = "\\ud800"
DEEP = 20_000


@dataclass
class World:
    client: APIClient
    tool: Agent
    rag: Agent

    def invoke(self, agent: Agent, route: str, raw: str) -> Any:
        url = f"/v1/agents/{agent.pk}/versions/latest/{route}"
        return self.client.generic("POST", url, raw, JSON)

    def upload(self, **fields: str) -> Any:
        note = SimpleUploadedFile("note.txt", b"The warranty covers parts.", "text/plain")
        return self.client.post("/v1/documents", {"file": note, **fields}, format="multipart")


@pytest.fixture
def world(owner: Any, make_agent: Any) -> Iterator[World]:
    cache.clear()  # throttles
    yield World(client_for(owner), make_agent(), make_agent("docs", "rag"))
    cache.clear()


def assert_located(response: Any, loc: list[Any]) -> None:
    """docs/api.md#errors: a 400 whose `detail` names `loc` (or a field below it)."""
    assert response.status_code == 400, response.content[:500]
    assert response["Content-Type"].startswith(JSON)
    located = [item["loc"] for item in response.json()["detail"]]
    assert any(found[: len(loc)] == loc for found in located), located


# ---------------------------------------------------------------- documents


@pytest.mark.parametrize("field", ["title", "docType"])
def test_nul_in_a_multipart_field_is_400(world: World, field: str) -> None:
    assert_located(world.upload(**{field: "a\x00b"}), ["body", field])
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("metadata", "loc"),
    [
        ('{"note": "a\\u0000b"}', ["body", "metadata", "note"]),
        ('{"note": "' + LONE_SURROGATE + '"}', ["body", "metadata", "note"]),
        ('{"ratio": NaN}', ["body", "metadata"]),
        ('{"ratio": -Infinity}', ["body", "metadata"]),
        ('{"deep": ' + "[" * DEEP + "]" * DEEP + "}", ["body", "metadata"]),
    ],
    ids=["nul", "lone-surrogate", "nan", "infinity", "deep"],
)
def test_hostile_multipart_metadata_is_400(world: World, metadata: str, loc: list[Any]) -> None:
    assert_located(world.upload(metadata=metadata), loc)
    assert not Document.objects.exists()


def test_multipart_title_over_its_column_is_400(world: World) -> None:
    assert_located(world.upload(title="t" * 501), ["body", "title"])
    assert not Document.objects.exists()


def test_lone_surrogate_in_json_document_metadata_is_400(world: World) -> None:
    raw = '{"title": "t", "text": "x", "metadata": {"k": "' + LONE_SURROGATE + '"}}'
    response = world.client.generic("POST", "/v1/documents", raw, JSON)
    assert_located(response, ["body", "metadata", "k"])
    assert not Document.objects.exists()


def test_clean_multipart_upload_is_accepted(world: World) -> None:
    response = world.upload(title="Warranty", docType="policy", metadata='{"year": 2024}')
    assert response.status_code == 202, response.content
    document = Document.objects.get()
    assert (document.title, document.doc_type, document.metadata) == (
        "Warranty",
        "policy",
        {"year": 2024},
    )


# ---------------------------------------------------------------- invocations


@pytest.mark.parametrize("route", ["invoke", "invoke-stream", "respond"])
def test_lone_surrogate_in_message_content_is_400(world: World, route: str) -> None:
    raw = '{"messages": [{"role": "user", "content": "a' + LONE_SURROGATE + 'b"}]}'
    assert_located(world.invoke(world.tool, route, raw), ["body", "messages", 0, "content"])
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["/v1/chat/completions", "/v1/openai/chat/completions", "agent"],
)
def test_lone_surrogate_in_chat_completion_content_is_400(world: World, url: str) -> None:
    raw = '{"model": "calc", "messages": [{"role": "user", "content": "' + LONE_SURROGATE + '"}]}'
    if url == "agent":
        url = f"/v1/agents/{world.tool.pk}/versions/latest/chat/completions"
    response = world.client.generic("POST", url, raw, JSON)
    assert response.status_code == 400, response.content
    error = response.json()["error"]  # OpenAI's error body: the field is its `param`
    assert (error["type"], error["param"]) == ("invalid_request_error", "messages[0].content")
    assert not Run.objects.exists()


def test_lone_surrogate_in_a_rag_requests_hxql_query_is_400(world: World) -> None:
    hxql = "SELECT * FROM SysContent WHERE sys_title = '" + LONE_SURROGATE + "'"  # noqa: S608 - HxQL
    raw = json.dumps({"messages": [QUESTION]})[:-1] + ', "hxqlQuery": "' + hxql + '"}'
    assert_located(world.invoke(world.rag, "invoke", raw), ["body", "hxqlQuery"])
    assert not Run.objects.exists()


# ---------------------------------------------------------------- paths, headers, search


@pytest.mark.parametrize(
    ("url", "loc"),
    [
        ("/v1/threads/a%00b", ["path", "threadId"]),
        ("/v1/runs/a%00b", ["path", "runId"]),
        ("/v1/mcp-servers/a%00b", ["path", "serverId"]),
    ],
)
def test_nul_in_a_path_parameter_is_400(world: World, url: str, loc: list[Any]) -> None:
    assert_located(world.client.get(url), loc)


def test_nul_in_an_openai_model_name_is_400_in_openais_shape(world: World) -> None:
    response = world.client.get("/v1/openai/models/a%00b")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == "model"


def test_nul_in_the_environment_header_is_400(world: World) -> None:
    response = world.client.get("/v1/agents", HTTP_X_ENVIRONMENT="de\x00fault")
    assert_located(response, ["header", "X-Environment"])


@pytest.mark.parametrize(
    "number",
    ["1" + "0" * 5000 + ".5", "-1" + "0" * 5000, "1" + "0" * 5000],
    ids=["overflows-to-infinity", "negative", "integer-past-str-digits-limit"],
)
def test_hxql_number_past_a_doubles_range_is_400(world: World, number: str) -> None:
    hxql = f"SELECT * FROM SysContent WHERE year > {number}"  # noqa: S608 - HxQL, parsed
    body = {"query": "warranty", "hxqlQuery": hxql}
    response = world.client.post("/v1/search", body, format="json")
    assert_located(response, ["body", "hxqlQuery"])
    assert "digits" in response.json()["detail"][0]["msg"]


# ---------------------------------------------------------------- properties


def _raw(body: Any) -> str:
    # ensure_ascii: a lone surrogate travels as its escape, as a real client would send it.
    return json.dumps(body, ensure_ascii=True)


MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": ANY_TEXT}),
    min_size=1,
    max_size=3,
)


@PROPERTY
@given(messages=MESSAGES, thread_id=st.none() | ANY_TEXT)
def test_any_invoke_body_is_answered_or_refused_never_a_500(
    world: World, messages: list[dict[str, str]], thread_id: str | None
) -> None:
    runs = Run.objects.count()
    body = {"messages": messages, "threadId": thread_id}
    response = world.invoke(world.tool, "invoke", _raw(body))
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:
        assert response.json()["detail"]
        assert Run.objects.count() == runs


@PROPERTY
@given(title=ANY_TEXT, metadata=st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3))
def test_any_document_body_is_accepted_or_refused_never_a_500(
    world: World, title: str, metadata: dict[str, Any]
) -> None:
    documents = Document.objects.count()
    body = {"title": title, "text": "The warranty covers parts.", "metadata": metadata}
    response = world.client.generic("POST", "/v1/documents", _raw(body), JSON)
    # 200: an earlier example stored these bytes already (the same text is one document).
    assert response.status_code in (200, 202, 400), response.content[:300]
    if response.status_code == 400:
        assert response.json()["detail"]
        assert Document.objects.count() == documents


# A form is encoded as UTF-8 by the client: no surrogates there, except escaped in JSON.
FORM_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


@PROPERTY
@given(metadata=FORM_TEXT | JSON_VALUES.map(_raw), doc_type=FORM_TEXT)
def test_any_multipart_field_is_accepted_or_refused_never_a_500(
    world: World, metadata: str, doc_type: str
) -> None:
    documents = Document.objects.count()
    response = world.upload(metadata=metadata, docType=doc_type)
    # 200: an earlier example stored these bytes already (the same file is one document).
    assert response.status_code in (200, 202, 400), response.content[:300]
    if response.status_code == 400:
        assert response.json()["detail"]
    if response.status_code != 202:
        assert Document.objects.count() == documents
