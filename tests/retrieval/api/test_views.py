"""The documents API (docs/api.md#documents): upload as JSON or a file, status, list,
delete, search, with the environment's permissions (READ, CREATE, DELETE) and nothing across
environments."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import Environment
from retrieval.models import Chunk, Document
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.retrieval.pdfs import make_pdf

pytestmark = pytest.mark.django_db

HANDBOOK = "Employees get twenty five days of paid vacation. Requests go to the line manager."


@pytest.fixture
def post_document(django_capture_on_commit_callbacks) -> Callable[..., Any]:
    """POST /v1/documents and run the ingestion its commit schedules (eager Celery)."""

    def post(client: APIClient, data: dict[str, Any], fmt: str = "json", **extra: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return client.post("/v1/documents", data, format=fmt, **extra)

    return post


def user_with(environment: Environment, *actions: Action, name: str) -> APIClient:
    user = UserFactory(username=name)
    for action in actions:
        grant(user, action, environment)
    return client_for(user)


def detail(client: APIClient, document_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/documents/{document_id}")
    assert response.status_code == 200, response.json()
    return response.json()


# --- upload --------------------------------------------------------------------------------


def test_json_upload_is_accepted_pending_then_ready(owner_client, post_document):
    response = post_document(
        owner_client,
        {
            "title": "Handbook",
            "text": HANDBOOK,
            "docType": "policy",
            "metadata": {"team": "hr", "objectId": "kb-1"},
        },
    )

    assert response.status_code == 202, response.json()
    body = response.json()
    assert body == {"id": body["id"], "status": "pending"}
    document = detail(owner_client, body["id"])
    assert document["status"] == "ready"
    assert document["error"] == ""
    assert document["ingestedAt"] is not None
    assert document["title"] == "Handbook"
    assert document["docType"] == "policy"
    assert document["metadata"] == {"team": "hr", "objectId": "kb-1"}
    assert document["mediaType"] == "text/plain"
    assert document["chunkCount"] == Chunk.objects.filter(document_id=body["id"]).count() > 0
    assert set(document) == {
        "id",
        "title",
        "docType",
        "metadata",
        "chunkCount",
        "sourceName",
        "mediaType",
        "status",
        "error",
        "createdAt",
        "ingestedAt",
    }
    assert Chunk.objects.filter(document_id=body["id"]).count() == 1


def test_upload_records_the_uploader_and_environment(owner, owner_client, env, post_document):
    response = post_document(owner_client, {"title": "Mine", "text": HANDBOOK})

    document = Document.objects.get(pk=response.json()["id"])
    assert (document.created_by, document.environment) == (owner, env)


MARKDOWN = b"# Travel policy\n\nBook trains for trips **under four hours**.\n\n- Economy class\n"
HTML = (
    b"<html><head><title>t</title><style>p{}</style></head><body><nav>Home | About</nav>"
    b"<main><h1>Expenses</h1><p>Meals are reimbursed up to forty euros a day.</p></main>"
    b"</body></html>"
)
PDF = make_pdf([["Security badge rules.", "Wear the badge at all times."]])


@pytest.mark.parametrize(
    ("name", "content", "content_type", "media_type", "expected"),
    [
        ("travel.md", MARKDOWN, "text/markdown", "text/markdown", "Book trains for trips"),
        ("travel.md", MARKDOWN, "application/octet-stream", "text/markdown", "Economy class"),
        ("expenses.html", HTML, "text/html", "text/html", "forty euros a day"),
        ("badge.pdf", PDF, "application/pdf", "application/pdf", "Wear the badge at all times."),
        ("notes.txt", HANDBOOK.encode(), "text/plain", "text/plain", "line manager"),
    ],
)
def test_multipart_upload_of_each_supported_type_is_ingested(
    owner_client, post_document, name, content, content_type, media_type, expected
):
    upload = SimpleUploadedFile(name, content, content_type=content_type)
    response = post_document(
        owner_client,
        {"file": upload, "docType": "guide", "metadata": json.dumps({"lang": "en"})},
        fmt="multipart",
    )

    assert response.status_code == 202, response.json()
    document = detail(owner_client, response.json()["id"])
    assert document["status"] == "ready", document["error"]
    assert (document["title"], document["sourceName"]) == (name, name)
    assert document["mediaType"] == media_type
    assert (document["docType"], document["metadata"]) == ("guide", {"lang": "en"})
    texts = Chunk.objects.filter(document_id=document["id"]).values_list("text", flat=True)
    assert any(expected in text for text in texts)
    if content_type == "text/html":
        assert not any("Home | About" in text for text in texts)


def test_multipart_title_overrides_the_file_name(owner_client, post_document):
    upload = SimpleUploadedFile("x.txt", HANDBOOK.encode(), content_type="text/plain")
    response = post_document(owner_client, {"file": upload, "title": "Handbook"}, fmt="multipart")

    assert detail(owner_client, response.json()["id"])["title"] == "Handbook"


def test_corrupt_pdf_upload_is_accepted_then_failed_with_reason(owner_client, post_document):
    upload = SimpleUploadedFile("bad.pdf", b"%PDF-1.7 not really", content_type="application/pdf")
    response = post_document(owner_client, {"file": upload}, fmt="multipart")

    assert response.status_code == 202
    document = detail(owner_client, response.json()["id"])
    assert document["status"] == "failed"
    assert "PDF" in document["error"]
    assert not Chunk.objects.filter(document_id=document["id"]).exists()


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("chart.png", "image/png"), ("data.bin", "application/octet-stream"), ("x.doc", "")],
)
def test_unsupported_file_type_is_415(owner_client, post_document, name, content_type):
    upload = SimpleUploadedFile(name, b"\x89PNG\r\n\x1a\n", content_type=content_type)
    response = post_document(owner_client, {"file": upload}, fmt="multipart")

    assert response.status_code == 415
    assert response["Content-Type"] == "application/json"
    assert "Unsupported media type" in response.json()["detail"]
    assert not Document.objects.exists()


def test_body_of_an_unsupported_content_type_is_415(owner_client):
    response = owner_client.post("/v1/documents", b"\x89PNG\r\n\x1a\n", content_type="image/png")

    assert response.status_code == 415
    assert isinstance(response.json()["detail"], str)
    assert not Document.objects.exists()


def test_json_text_must_be_a_text_media_type(owner_client, post_document):
    response = post_document(
        owner_client, {"title": "T", "text": "x", "mediaType": "application/pdf"}
    )

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == ["body", "mediaType"]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"text": HANDBOOK}, ["body", "title"]),
        ({"title": "T"}, ["body", "text"]),
        ({"title": "T", "text": ""}, ["body", "text"]),
        ({"title": "T", "text": "x", "metadata": [1]}, ["body", "metadata"]),
    ],
)
def test_invalid_json_upload_is_400_with_the_field(owner_client, post_document, body, loc):
    response = post_document(owner_client, body)

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == loc
    assert not Document.objects.exists()


@pytest.mark.parametrize("metadata", ["{not json", "[1, 2]"])
def test_multipart_metadata_must_be_a_json_object(owner_client, post_document, metadata):
    upload = SimpleUploadedFile("a.txt", b"Some text.", content_type="text/plain")
    response = post_document(owner_client, {"file": upload, "metadata": metadata}, fmt="multipart")

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == ["body", "metadata"]


def test_blank_multipart_title_falls_back_to_the_file_name(owner_client, post_document):
    upload = SimpleUploadedFile("named.txt", b"Some text.", content_type="text/plain")
    response = post_document(owner_client, {"file": upload, "title": ""}, fmt="multipart")

    assert detail(owner_client, response.json()["id"])["title"] == "named.txt"


def test_upload_over_the_size_limit_is_413(owner_client, post_document, settings):
    settings.DOCUMENT_MAX_BYTES = 100
    text = "x" * 101

    as_json = post_document(owner_client, {"title": "big", "text": text})
    upload = SimpleUploadedFile("big.txt", text.encode(), content_type="text/plain")
    as_file = post_document(owner_client, {"file": upload}, fmt="multipart")

    for response in (as_json, as_file):
        assert response.status_code == 413
        assert "100 bytes" in response.json()["detail"]
    assert not Document.objects.exists()

    at_limit = post_document(owner_client, {"title": "fits", "text": "x" * 100})
    assert at_limit.status_code == 202


def test_default_limit_is_25_mib(owner_client, django_capture_on_commit_callbacks):
    limit = 25 * 1024 * 1024
    over = SimpleUploadedFile("big.txt", b"a" * (limit + 1), content_type="text/plain")
    with django_capture_on_commit_callbacks(execute=False):
        response = owner_client.post("/v1/documents", {"file": over}, format="multipart")

    assert response.status_code == 413
    assert str(limit) in response.json()["detail"]
    assert not Document.objects.exists()


def test_same_bytes_again_answer_the_existing_document_with_200(owner_client, post_document):
    first = post_document(owner_client, {"title": "Handbook", "text": HANDBOOK})
    upload = SimpleUploadedFile("handbook.txt", HANDBOOK.encode(), content_type="text/plain")

    again = post_document(owner_client, {"file": upload, "title": "Copy"}, fmt="multipart")

    assert first.status_code == 202
    assert again.status_code == 200
    assert again.json() == {"id": first.json()["id"], "status": "ready"}
    # One document, as first uploaded: its title stays, and so do its chunks.
    [document] = Document.objects.all()
    assert document.title == "Handbook"
    assert document.chunk_count == Chunk.objects.count()


def test_same_bytes_in_another_environment_are_another_document(
    owner_client, other_env, post_document
):
    user = UserFactory(username="tenant")
    grant(user, Action.CREATE, other_env)
    ours = post_document(owner_client, {"title": "Handbook", "text": HANDBOOK})

    theirs = post_document(client_for(user, other_env), {"title": "Handbook", "text": HANDBOOK})

    assert theirs.status_code == 202
    assert theirs.json()["id"] != ours.json()["id"]


def test_copy_of_a_failed_document_ingests_it_again(owner_client, post_document, settings):
    settings.DOCUMENT_MAX_CHUNKS = 1
    long_text = " ".join(["Vacation requests go to the manager."] * 400)
    first = post_document(owner_client, {"title": "Long", "text": long_text}).json()
    assert detail(owner_client, first["id"])["status"] == "failed"
    settings.DOCUMENT_MAX_CHUNKS = 2000

    again = post_document(owner_client, {"title": "Long", "text": long_text})

    assert again.status_code == 200
    assert again.json() == {"id": first["id"], "status": "pending"}
    assert detail(owner_client, first["id"])["status"] == "ready"


# --- list, get, delete ---------------------------------------------------------------------


def test_list_is_paginated_newest_first_and_filters_by_status(
    owner_client, add_document, other_env, django_assert_max_num_queries
):
    first = add_document("First document.", title="first")
    second = add_document("Second document.", title="second")
    failed = add_document(b"", title="empty")
    add_document("Elsewhere.", title="elsewhere", environment=other_env)

    # user, environment, permission, count, page
    with django_assert_max_num_queries(5):
        page = owner_client.get("/v1/documents?limit=2").json()
    assert [d["title"] for d in page["documents"]] == ["empty", "second"]
    assert page["pagination"] == {"totalItems": 3, "offset": 0, "limit": 2, "hasMore": True}

    rest = owner_client.get("/v1/documents?offset=2&limit=2").json()
    assert [d["id"] for d in rest["documents"]] == [str(first.pk)]
    assert rest["pagination"]["hasMore"] is False

    ready = owner_client.get("/v1/documents?status=ready").json()
    assert {d["id"] for d in ready["documents"]} == {str(first.pk), str(second.pk)}
    only_failed = owner_client.get("/v1/documents?status=failed").json()["documents"]
    assert [(d["id"], d["status"]) for d in only_failed] == [(str(failed.pk), "failed")]
    assert "no text" in only_failed[0]["error"]


def test_list_rejects_an_unknown_status(owner_client):
    response = owner_client.get("/v1/documents?status=done")

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == ["query", "status"]


def test_get_shows_a_pending_document(owner_client, env, admin_user):
    document = Document.objects.create(
        environment=env, title="Queued", media_type="text/plain", source=b"x"
    )

    assert detail(owner_client, str(document.pk))["status"] == "pending"


def test_get_of_an_unknown_or_malformed_id(owner_client):
    assert owner_client.get(f"/v1/documents/{uuid.uuid4()}").status_code == 404
    malformed = owner_client.get("/v1/documents/not-a-uuid")
    assert malformed.status_code == 400
    assert malformed.json()["detail"][0]["loc"] == ["path", "documentId"]


def test_delete_removes_the_document_and_its_chunks(owner_client, add_document):
    document = add_document(HANDBOOK)
    kept = add_document("Another one.")
    assert Chunk.objects.filter(document=document).exists()

    response = owner_client.delete(f"/v1/documents/{document.pk}")

    assert response.status_code == 200
    assert response.json() == {"documentId": str(document.pk)}
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert owner_client.get(f"/v1/documents/{document.pk}").status_code == 404
    assert owner_client.delete(f"/v1/documents/{document.pk}").status_code == 404
    assert Chunk.objects.filter(document=kept).exists()


# --- search --------------------------------------------------------------------------------


@pytest.fixture
def library(add_document) -> dict[str, Document]:
    return {
        "vacation": add_document(
            HANDBOOK, title="vacation", metadata={"team": "hr", "objectId": "kb-7"}
        ),
        "travel": add_document(
            "Book trains for trips under four hours. Flights need approval.",
            title="travel",
            metadata={"team": "finance"},
        ),
    }


def test_search_returns_source_nodes_with_scores(owner_client, library):
    response = owner_client.post(
        "/v1/search",
        # minScore 0: the travel document shares no word with the query (score ~0.0003).
        {"query": "how many vacation days", "rerankerTopN": 5, "minScore": 0},
        format="json",
    )

    assert response.status_code == 200, response.json()
    nodes = response.json()["nodes"]
    assert [n["docId"] for n in nodes] == [str(library["vacation"].pk), str(library["travel"].pk)]
    top = nodes[0]
    chunk = Chunk.objects.get(document=library["vacation"])
    assert top == {
        "id": f"{library['vacation'].pk}:0",
        "docId": str(library["vacation"].pk),
        "objectId": "kb-7",
        "chunkId": str(chunk.pk),
        "score": top["score"],
        "text": HANDBOOK,
    }
    assert nodes[1]["objectId"] == str(library["travel"].pk)  # no objectId: the document
    assert 0 < nodes[1]["score"] < top["score"] <= 1


def test_search_applies_the_rag_settings(owner_client, library):
    filtered = owner_client.post(
        "/v1/search",
        {
            "query": "vacation",
            "hxqlQuery": "SELECT * FROM SysContent WHERE team = 'finance'",
            "hybridSearch": False,
            "limit": 5,
            "minScore": 0,
        },
        format="json",
    ).json()["nodes"]
    assert [n["docId"] for n in filtered] == [str(library["travel"].pk)]

    capped = owner_client.post(
        "/v1/search", {"query": "vacation trains", "rerankerTopN": 1}, format="json"
    ).json()["nodes"]
    assert len(capped) == 1


def test_search_drops_hits_below_min_score(owner_client, library):
    query = {"query": "how many vacation days", "rerankerTopN": 5}

    by_default = owner_client.post("/v1/search", query, format="json").json()["nodes"]
    strict = owner_client.post("/v1/search", {**query, "minScore": 1}, format="json").json()

    # The default threshold (0.1) drops the travel document, which shares no word.
    assert [n["docId"] for n in by_default] == [str(library["vacation"].pk)]
    assert strict["nodes"] == []


def test_search_threshold_comes_from_settings(owner_client, library, settings):
    settings.RAG_SCORE_THRESHOLD = 0.5
    nodes = owner_client.post("/v1/search", {"query": "vacation days"}, format="json").json()

    assert [n["docId"] for n in nodes["nodes"]] == [str(library["vacation"].pk)]
    assert all(n["score"] >= 0.5 for n in nodes["nodes"])


def test_search_with_merged_neighbours(owner_client, add_document, settings):
    settings.CHUNK_TOKENS = 8
    settings.CHUNK_OVERLAP = 0
    text = "Alpha owns the first part. Beta owns the second part. Gamma owns the last part."
    document = add_document(text)
    assert document.chunks.count() == 3

    nodes = owner_client.post(
        "/v1/search",
        {"query": "Beta", "rerankerTopN": 1, "adjacentChunkRange": 1, "adjacentChunkMerge": True},
        format="json",
    ).json()["nodes"]

    assert [(n["id"], n["text"]) for n in nodes] == [(f"{document.pk}:1", text)]


@pytest.mark.parametrize(
    ("hxql", "position"),
    [
        ("SELECT * FROM Agents", 14),
        ("SELECT * FROM SysContent WHERE team == 'x'", 36),
        ("SELECT * FROM SysContent WHERE sys_secret = 1", 31),
    ],
)
def test_search_with_a_bad_hxql_query_is_400_naming_the_position(owner_client, hxql, position):
    response = owner_client.post(
        "/v1/search", {"query": "anything", "hxqlQuery": hxql}, format="json"
    )

    assert response.status_code == 400
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "hxqlQuery"]
    assert f"position {position}" in error["msg"]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "query"]),
        ({"query": ""}, ["body", "query"]),
        ({"query": "x", "limit": 0}, ["body", "limit"]),
        ({"query": "x", "rerankerTopN": 101}, ["body", "rerankerTopN"]),
        ({"query": "x", "adjacentChunkRange": -1}, ["body", "adjacentChunkRange"]),
    ],
)
def test_search_body_is_validated(owner_client, body, loc):
    response = owner_client.post("/v1/search", body, format="json")

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == loc


def test_search_runs_one_query_for_the_nodes(
    owner_client, add_document, settings, django_assert_max_num_queries
):
    settings.CHUNK_TOKENS = 16
    settings.CHUNK_OVERLAP = 4
    add_document(" ".join(f"Vacation fact number {i} is here." for i in range(30)))

    # user, environment, permission; the documents' chunk count and the search (in a
    # savepoint): never one query per chunk or per neighbour
    with django_assert_max_num_queries(7):
        response = owner_client.post(
            "/v1/search",
            {"query": "vacation fact", "limit": 20, "rerankerTopN": 20, "adjacentChunkRange": 2},
            format="json",
        )
    nodes = response.json()["nodes"]
    # The 20 hits, then the neighbours that are not hits themselves, each listed once.
    assert 20 < len(nodes) <= 30
    assert len({n["chunkId"] for n in nodes}) == len(nodes)


# --- permissions and environments ----------------------------------------------------------


def test_without_a_token_every_route_is_401(add_document):
    document = add_document(HANDBOOK)
    anonymous = APIClient()

    assert anonymous.get("/v1/documents").status_code == 401
    assert anonymous.get(f"/v1/documents/{document.pk}").status_code == 401
    assert anonymous.delete(f"/v1/documents/{document.pk}").status_code == 401
    assert anonymous.post("/v1/search", {"query": "x"}, format="json").status_code == 401
    response = anonymous.post("/v1/documents", {"title": "t", "text": "x"}, format="json")
    assert response.status_code == 401
    assert Document.objects.count() == 1


def test_read_permission_lists_gets_and_searches_but_cannot_write(env, add_document, post_document):
    document = add_document(HANDBOOK)
    reader = user_with(env, Action.READ, name="reader")

    assert reader.get("/v1/documents").status_code == 200
    assert reader.get(f"/v1/documents/{document.pk}").status_code == 200
    assert reader.post("/v1/search", {"query": "vacation"}, format="json").status_code == 200
    upload = post_document(reader, {"title": "t", "text": "x"})
    assert upload.status_code == 403
    assert "CREATE" in upload.json()["detail"]
    assert reader.delete(f"/v1/documents/{document.pk}").status_code == 403
    assert Document.objects.count() == 1


def test_create_permission_uploads_but_cannot_read(env, post_document):
    creator = user_with(env, Action.CREATE, name="creator")

    response = post_document(creator, {"title": "Mine", "text": HANDBOOK})
    assert response.status_code == 202
    assert creator.get("/v1/documents").status_code == 403
    assert creator.get(f"/v1/documents/{response.json()['id']}").status_code == 403
    assert creator.post("/v1/search", {"query": "vacation"}, format="json").status_code == 403


def test_delete_permission_deletes(env, add_document):
    document = add_document(HANDBOOK)
    deleter = user_with(env, Action.DELETE, name="deleter")

    assert deleter.get("/v1/documents").status_code == 403
    assert deleter.delete(f"/v1/documents/{document.pk}").status_code == 200
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()


@pytest.mark.parametrize("action", [Action.EDIT, Action.INVOKE])
def test_other_agent_permissions_grant_nothing_on_documents(env, add_document, action):
    document = add_document(HANDBOOK)
    client = user_with(env, action, name="other")

    assert client.get("/v1/documents").status_code == 403
    assert client.post("/v1/search", {"query": "vacation"}, format="json").status_code == 403
    assert client.delete(f"/v1/documents/{document.pk}").status_code == 403


def test_stranger_is_refused_everywhere(stranger, add_document, post_document):
    document = add_document(HANDBOOK)
    client = client_for(stranger)

    assert client.get("/v1/documents").status_code == 403
    assert client.get(f"/v1/documents/{document.pk}").status_code == 403
    assert client.post("/v1/search", {"query": "vacation"}, format="json").status_code == 403
    assert post_document(client, {"title": "t", "text": "x"}).status_code == 403
    assert client.delete(f"/v1/documents/{document.pk}").status_code == 403
    assert Document.objects.count() == 1


def test_superuser_may_do_everything(admin_user, add_document, post_document):
    document = add_document(HANDBOOK)
    client = client_for(admin_user)

    assert client.get(f"/v1/documents/{document.pk}").status_code == 200
    assert post_document(client, {"title": "t", "text": "x"}).status_code == 202
    assert client.delete(f"/v1/documents/{document.pk}").status_code == 200


def test_a_document_of_another_environment_is_404(owner_client, add_document, other_env):
    theirs = add_document(HANDBOOK, environment=other_env)

    assert owner_client.get(f"/v1/documents/{theirs.pk}").status_code == 404
    assert owner_client.delete(f"/v1/documents/{theirs.pk}").status_code == 404
    assert Chunk.objects.filter(document=theirs).exists()
    listed = owner_client.get("/v1/documents").json()
    assert listed["documents"] == []
    assert listed["pagination"]["totalItems"] == 0
    nodes = owner_client.post("/v1/search", {"query": "vacation"}, format="json").json()["nodes"]
    assert nodes == []


def test_grants_in_another_environment_do_not_reach_this_one(env, other_env, add_document):
    ours = add_document(HANDBOOK, title="ours")
    theirs = add_document(HANDBOOK, title="theirs", environment=other_env)
    user = UserFactory(username="elsewhere")
    for action in Action:
        grant(user, action, other_env)
    by_default = client_for(user)
    by_claim = client_for(user, env)
    by_header = {"HTTP_X_ENVIRONMENT": "default"}

    # No environment named: the default one, where the user holds nothing.
    assert by_default.get("/v1/documents").status_code == 403
    assert by_default.get(f"/v1/documents/{ours.pk}").status_code == 403
    assert by_default.post("/v1/search", {"query": "vacation"}, format="json").status_code == 403
    assert by_claim.get("/v1/documents").status_code == 403
    # Named by header, the default environment is not even visible to this user.
    assert by_default.get("/v1/documents", **by_header).status_code == 404
    assert by_default.delete(f"/v1/documents/{ours.pk}", **by_header).status_code == 404
    assert Document.objects.filter(pk=ours.pk).exists()

    # In its own environment the user sees its documents, and only those.
    own = client_for(user, other_env)
    assert [d["id"] for d in own.get("/v1/documents").json()["documents"]] == [str(theirs.pk)]
    assert own.get(f"/v1/documents/{ours.pk}").status_code == 404
    nodes = own.post("/v1/search", {"query": "vacation"}, format="json").json()["nodes"]
    assert [n["docId"] for n in nodes] == [str(theirs.pk)]
    via_header = by_default.post(
        "/v1/search", {"query": "vacation"}, format="json", HTTP_X_ENVIRONMENT="other"
    ).json()["nodes"]
    assert [n["docId"] for n in via_header] == [str(theirs.pk)]


def test_upload_goes_to_the_token_environment(other_env, post_document):
    user = UserFactory(username="tenant")
    grant(user, Action.CREATE, other_env)

    response = post_document(client_for(user, other_env), {"title": "Theirs", "text": HANDBOOK})

    assert response.status_code == 202
    assert Document.objects.get(pk=response.json()["id"]).environment == other_env
    # Without the claim the request is in the default environment, where it holds nothing.
    assert post_document(client_for(user), {"title": "t", "text": "x"}).status_code == 403
