"""Documents in the admin (retrieval/admin/documents.py, upload.py, search.py)
over HTTP: upload one or several files, status and errors in the list, chunks on the page,
re-ingest, edit, delete, try retrieval as POST /v1/search runs it, and the environment's
permissions as the documents API applies them."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agentbuilder.api.middleware import max_body_bytes
from agents.access.permissions import Action, grant
from agents.models import Environment
from retrieval.models import Chunk, Document
from tests.factories import RAG_CONFIG, EnvironmentFactory, UserFactory

HANDBOOK = "Employees get twenty five days of paid vacation. Requests go to the line manager."
TRAVEL = "Book trains for trips under four hours. Flights need approval from finance."

LIST = reverse("admin:retrieval_document_changelist")
UPLOAD = reverse("admin:retrieval_document_add")
SEARCH = reverse("admin:retrieval_document_search")


def page_of(document: Document) -> str:
    return reverse("admin:retrieval_document_change", args=[document.pk])


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def site(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def staff(name: str, grants: dict[Environment, list[Action]], *model_actions: str) -> Client:
    """A staff user with the admin's document permissions (view, add, change, delete by
    default) and the given environment grants, logged in."""
    user = UserFactory(username=name, is_staff=True)
    for action in model_actions or ("view", "add", "change", "delete"):
        user.user_permissions.add(
            Permission.objects.get(
                codename=f"{action}_document", content_type__app_label="retrieval"
            )
        )
    for environment, actions in grants.items():
        for action in actions:
            grant(user, action, environment)
    client = Client()
    client.force_login(user)
    return client


def upload(client: Client, capture: Any, *files: SimpleUploadedFile, **fields: Any) -> Any:
    """POST the upload form and run the ingestion its commit schedules."""
    data = {"file": list(files), "metadata": "", **fields}
    with capture(execute=True):
        return client.post(UPLOAD, data)


def txt(name: str, content: str | bytes, content_type: str = "text/plain") -> SimpleUploadedFile:
    raw = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, raw, content_type=content_type)


def form_errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, "the form should have been shown again"
    return response.context["form"].errors


# --- upload --------------------------------------------------------------------------------


def test_uploading_two_files_creates_two_ready_documents_with_their_chunks_shown(
    site, env, django_capture_on_commit_callbacks
):
    response = upload(
        site,
        django_capture_on_commit_callbacks,
        txt("handbook.txt", HANDBOOK),
        txt("travel.md", f"# Travel\n\n{TRAVEL}", "text/markdown"),
        environment=env.pk,
        doc_type="policy",
        metadata='{"team": "hr"}',
    )

    assert response.status_code == 302, form_errors(response)
    assert response["Location"] == LIST
    documents = {d.title: d for d in Document.objects.all()}
    assert set(documents) == {"handbook.txt", "travel.md"}
    for document in documents.values():
        assert (document.status, document.error) == ("ready", "")
        assert (document.environment_id, document.doc_type) == (env.pk, "policy")
        assert document.metadata == {"team": "hr"}
        assert document.chunk_count == Chunk.objects.filter(document=document).count() >= 1
    assert documents["travel.md"].media_type == "text/markdown"
    listing = text(site.get(LIST))
    assert "Uploaded 2 documents" in listing
    assert listing.count("doc-status-ready") == 2
    handbook = text(site.get(page_of(documents["handbook.txt"])))
    assert "Chunks (1)" in handbook
    assert HANDBOOK in handbook


def test_a_single_file_takes_the_title_given(site, env, django_capture_on_commit_callbacks):
    response = upload(
        site,
        django_capture_on_commit_callbacks,
        txt("h.txt", HANDBOOK),
        environment=env.pk,
        title="Handbook",
    )

    assert response.status_code == 302, form_errors(response)
    assert Document.objects.get().title == "Handbook"


def test_a_title_for_several_files_is_refused(site, env, django_capture_on_commit_callbacks):
    response = upload(
        site,
        django_capture_on_commit_callbacks,
        txt("a.txt", HANDBOOK),
        txt("b.txt", TRAVEL),
        environment=env.pk,
        title="Both",
    )

    assert "A title names one file" in form_errors(response)["title"][0]
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            txt("photo.png", b"\x89PNG\r\n", "image/png"),
            'photo.png: Unsupported media type "image/png"',
        ),
        (txt("big.txt", "x" * 200), "big.txt: Documents are limited to 100 bytes."),
        (
            txt("latin1.txt", "Caf\xe9 au lait".encode("latin-1")),
            "latin1.txt: not valid utf-8 text",
        ),
        (txt("blob.txt", b"text\x00\x01"), "blob.txt: binary data, not text"),
    ],
    ids=["unsupported-type", "over-size", "not-utf-8", "binary"],
)
def test_a_bad_file_is_a_form_error_and_nothing_of_the_batch_is_stored(
    site, env, settings, django_capture_on_commit_callbacks, bad, message
):
    settings.DOCUMENT_MAX_BYTES = 100

    response = upload(
        site, django_capture_on_commit_callbacks, txt("good.txt", "Fine."), bad, environment=env.pk
    )

    [error] = form_errors(response)["file"]
    assert error.startswith(message)
    assert "Nothing was uploaded" in text(response)
    assert not Document.objects.exists()


def test_metadata_must_be_a_json_object(site, env, django_capture_on_commit_callbacks):
    response = upload(
        site,
        django_capture_on_commit_callbacks,
        txt("a.txt", HANDBOOK),
        environment=env.pk,
        metadata="[1, 2]",
    )

    assert form_errors(response)["metadata"] == ["Metadata must be a JSON object."]
    assert not Document.objects.exists()


def test_a_corrupt_pdf_is_accepted_then_listed_as_failed_with_its_reason(
    site, env, django_capture_on_commit_callbacks
):
    response = upload(
        site,
        django_capture_on_commit_callbacks,
        txt("bad.pdf", b"%PDF-1.7 not really", "application/pdf"),
        environment=env.pk,
    )

    assert response.status_code == 302, form_errors(response)
    document = Document.objects.get()
    assert document.status == "failed"
    listing = text(site.get(LIST))
    assert "doc-status-failed" in listing
    assert document.error[:60] in listing
    assert "None: ingestion failed" in text(site.get(page_of(document)))


def test_the_admin_upload_takes_a_body_over_the_api_limit(
    site, env, settings, django_capture_on_commit_callbacks
):
    big = txt("big.txt", "word " * (settings.API_MAX_BODY_BYTES // 5 + 1000))

    with django_capture_on_commit_callbacks(execute=False):  # stored; ingestion not needed
        response = site.post(UPLOAD, {"file": [big], "environment": env.pk, "metadata": ""})

    assert response.status_code == 302, response.content[:300]
    assert Document.objects.get().source_name == "big.txt"
    limit = 4 * settings.DOCUMENT_MAX_BYTES + 64 * 1024
    assert max_body_bytes(UPLOAD) == max_body_bytes(UPLOAD.rstrip("/")) == limit


# --- the list and the page -----------------------------------------------------------------


def test_page_shows_chunks_a_page_at_a_time_without_their_embeddings(site, add_document, settings):
    settings.CHUNK_TOKENS, settings.CHUNK_OVERLAP = 8, 0
    sentences = " ".join(f"Sentence number {i} is here." for i in range(60))
    document = add_document(sentences)
    assert document.chunk_count > 20

    with CaptureQueriesContext(connection) as queries:
        first = text(site.get(page_of(document)))
    second = text(site.get(page_of(document) + "?chunks=2"))

    assert f"Chunks ({document.chunk_count})" in first
    assert first.count('class="doc-chunk"') == 20
    assert "Page 1 of" in first
    assert second.count('class="doc-chunk"') == min(20, document.chunk_count - 20)
    assert not any('"embedding"' in q["sql"] for q in queries.captured_queries)


def test_list_runs_a_fixed_number_of_queries(site, add_document, django_assert_max_num_queries):
    for i in range(5):
        add_document(f"{HANDBOOK} ({i})", title=f"doc {i}")

    with django_assert_max_num_queries(10):
        response = site.get(LIST)

    assert text(response).count("doc-status-ready") == 5


def test_list_filters_by_document_type_an_empty_one_included(site, add_document):
    add_document(HANDBOOK, title="Alpha", doc_type="policy")
    add_document(TRAVEL, title="Beta")

    listing = text(site.get(LIST))
    untyped = text(site.get(LIST, {"doc_type": "-"}))
    typed = text(site.get(LIST, {"doc_type": "policy"}))

    assert 'href="?doc_type=-">(none)</a>' in listing
    assert (">Alpha<" in untyped, ">Beta<" in untyped) == (False, True)
    assert (">Alpha<" in typed, ">Beta<" in typed) == (True, False)


def test_change_form_edits_title_and_metadata_without_touching_the_status(site, add_document):
    document = add_document(HANDBOOK, title="Old")
    data = {"title": "Handbook", "doc_type": "policy", "metadata": '{"year": 2025}'}

    response = site.post(page_of(document), data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    document.refresh_from_db()
    assert (document.title, document.doc_type, document.metadata) == (
        "Handbook",
        "policy",
        {"year": 2025},
    )
    assert (document.status, document.chunk_count) == ("ready", 1)


def test_change_form_refuses_metadata_that_is_not_an_object(site, add_document):
    document = add_document(HANDBOOK, title="Old")

    response = site.post(page_of(document), {"title": "New", "metadata": '"text"'})

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["metadata"] == [
        "Metadata must be a JSON object."
    ]
    assert Document.objects.get(pk=document.pk).title == "Old"


# --- re-ingest and delete ------------------------------------------------------------------


def test_reingest_button_ingests_a_failed_document_again(
    site, add_document, django_capture_on_commit_callbacks
):
    document = add_document(HANDBOOK)
    Document.objects.filter(pk=document.pk).update(status="failed", error="old")
    Chunk.objects.filter(document=document).delete()
    assert "Ingest again" in text(site.get(page_of(document)))

    with django_capture_on_commit_callbacks(execute=True):
        response = site.post(reverse("admin:retrieval_document_reingest", args=[document.pk]))

    assert response.status_code == 302
    assert response["Location"] == page_of(document)
    document.refresh_from_db()
    assert (document.status, document.error) == ("ready", "")
    assert Chunk.objects.filter(document=document).count() == 1


def test_reingest_is_a_post(site, add_document):
    document = add_document(HANDBOOK)

    response = site.get(reverse("admin:retrieval_document_reingest", args=[document.pk]))

    assert response.status_code == 405


def test_reingest_action_ingests_the_selection_again(
    site, add_document, django_capture_on_commit_callbacks
):
    document = add_document(HANDBOOK)
    Document.objects.filter(pk=document.pk).update(status="failed", error="old")

    with django_capture_on_commit_callbacks(execute=True):
        site.post(LIST, {"action": "reingest", "_selected_action": [str(document.pk)]})

    document.refresh_from_db()
    assert (document.status, document.error) == ("ready", "")


def test_delete_removes_the_document_and_its_chunks(site, add_document):
    document = add_document(HANDBOOK)
    kept = add_document(TRAVEL)
    delete = reverse("admin:retrieval_document_delete", args=[document.pk])

    confirmation = text(site.get(delete))
    response = site.post(delete, {"post": "yes"})

    assert "chunks: 1" in confirmation.lower()
    assert response.status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert Chunk.objects.filter(document=kept).exists()


def test_delete_action_removes_the_selection_and_its_chunks(site, add_document):
    documents = [add_document(HANDBOOK), add_document(TRAVEL)]
    selected = [str(d.pk) for d in documents]

    response = site.post(
        LIST, {"action": "delete_selected", "_selected_action": selected, "post": "yes"}
    )

    assert response.status_code == 302
    assert not Document.objects.exists()
    assert not Chunk.objects.exists()


# --- try retrieval -------------------------------------------------------------------------


@pytest.fixture
def library(add_document) -> dict[str, Document]:
    return {
        "vacation": add_document(HANDBOOK, title="vacation", metadata={"team": "hr"}),
        "travel": add_document(TRAVEL, title="travel", metadata={"team": "finance"}),
        "expenses": add_document(
            "Meals on trips are reimbursed up to forty euros a day.",
            title="expenses",
            metadata={"team": "finance"},
        ),
    }


def hits(response: Any) -> list[tuple[str, float]]:
    assert response.status_code == 200
    found = re.findall(
        r'data-id="([^"]+)" data-chunk-id="\d+" data-score="([^"]+)"', text(response)
    )
    return [(node_id, float(score)) for node_id, score in found]


def api_hits(client: Any, body: dict[str, Any]) -> list[tuple[str, float]]:
    response = client.post("/v1/search", body, format="json")
    assert response.status_code == 200, response.json()
    return [(n["id"], n["score"]) for n in response.json()["nodes"]]


@pytest.mark.parametrize(
    ("fields", "body"),
    [
        ({}, {}),
        (
            {"hxql_query": "SELECT * FROM SysContent WHERE team = 'finance'"},
            {"hxqlQuery": "SELECT * FROM SysContent WHERE team = 'finance'"},
        ),
        (
            {"mode": "vector", "limit": "2", "reranker_top_n": "1"},
            {"hybridSearch": False, "limit": 2, "rerankerTopN": 1},
        ),
    ],
    ids=["defaults", "filter", "overrides"],
)
def test_retrieval_page_finds_what_post_search_finds(
    site, env, owner_client, library, fields, body
):
    query = "trips and travel"

    page = site.get(SEARCH, {"environment": env.pk, "query": query, **fields})

    expected = api_hits(owner_client, {"query": query, **body})
    assert expected
    assert hits(page) == expected
    assert library["travel"].title in text(page)


def test_retrieval_page_uses_the_settings_of_the_chosen_rag_agent(
    site, env, owner_client, library, make_agent
):
    hr_only = "SELECT * FROM SysContent WHERE team = 'hr'"
    agent = make_agent(
        "helper",
        "rag",
        # minScore 0: the HR document says nothing of trips, and is found all the same.
        config={**RAG_CONFIG, "hxqlQuery": hr_only, "hybridSearch": False, "minScore": 0},
    )

    page = site.get(SEARCH, {"environment": env.pk, "agent": agent.pk, "query": "trips"})

    expected = api_hits(
        owner_client,
        {"query": "trips", "hxqlQuery": hr_only, "hybridSearch": False, "minScore": 0},
    )
    assert hits(page) == expected
    assert [node_id.split(":")[0] for node_id, _ in expected] == [str(library["vacation"].pk)]
    assert "Vector search" in text(page)


def test_retrieval_page_refuses_an_agent_of_another_environment(
    site, env, other_env, library, make_agent
):
    agent = make_agent("elsewhere", "rag", environment=other_env)

    page = site.get(SEARCH, {"environment": env.pk, "agent": agent.pk, "query": "trips"})

    assert page.context["form"].errors["agent"] == ["elsewhere is not an agent of default."]


@pytest.mark.parametrize(
    ("hxql", "position"),
    [
        ("SELECT * FROM Agents", 14),
        ("SELECT * FROM SysContent WHERE team == 'x'", 36),
    ],
)
def test_retrieval_page_shows_a_bad_hxql_at_its_position(site, env, library, hxql, position):
    page = site.get(SEARCH, {"environment": env.pk, "query": "trips", "hxql_query": hxql})

    [error] = page.context["form"].errors["hxql_query"]
    assert f"at position {position}" in error
    assert f"position {position}" in text(page)
    assert hits(page) == []


def test_retrieval_page_without_a_query_shows_the_empty_form(site, env):
    page = site.get(SEARCH)

    assert page.status_code == 200
    assert not page.context["form"].is_bound
    assert page.context["form"].initial == {"environment": env.pk}


# --- permissions: the environment's, as the documents API applies them ---------------------


@pytest.fixture
def elsewhere(add_document, other_env) -> Document:
    return add_document(TRAVEL, title="elsewhere", environment=other_env)


def test_staff_see_only_documents_of_environments_they_may_read(env, add_document, elsewhere):
    mine = add_document(HANDBOOK, title="mine")
    third = EnvironmentFactory(name="third")
    add_document(TRAVEL, title="also mine", environment=third)
    client = staff("reader", {env: [Action.READ], third: [Action.READ]})

    listing = text(client.get(LIST))

    assert ("mine" in listing, "also mine" in listing, "elsewhere" in listing) == (
        True,
        True,
        False,
    )
    environments = re.findall(r'href="\?environment__id__exact=[^"]*">([^<]+)<', listing)
    assert sorted(environments) == ["default", "third"]  # the filter: no "other"
    assert client.get(page_of(mine)).status_code == 200
    assert client.get(page_of(elsewhere)).status_code == 302  # the admin's "does not exist"
    assert Document.objects.filter(pk=elsewhere.pk).exists()


def test_staff_cannot_upload_into_an_environment_without_create(
    env, other_env, django_capture_on_commit_callbacks
):
    client = staff("uploader", {env: [Action.READ, Action.CREATE]})

    response = upload(
        client,
        django_capture_on_commit_callbacks,
        txt("a.txt", HANDBOOK),
        environment=other_env.pk,
    )

    assert "Select a valid choice" in form_errors(response)["environment"][0]
    assert not Document.objects.exists()
    assert [e.pk for e in response.context["form"].fields["environment"].queryset] == [env.pk]


def test_staff_with_only_read_get_no_upload_page(env):
    client = staff("reader", {env: [Action.READ]})

    assert client.get(UPLOAD).status_code == 403
    assert "Upload documents" not in text(client.get(LIST))


def test_staff_without_the_admin_permission_get_no_documents_at_all(env, add_document):
    user = UserFactory(username="granted", is_staff=True)
    for action in Action:
        grant(user, action, env)
    client = Client()
    client.force_login(user)

    assert client.get(LIST).status_code == 403
    assert client.get(UPLOAD).status_code == 403
    assert client.get(SEARCH).status_code == 403


def test_staff_without_edit_or_delete_can_neither_reingest_nor_delete(env, add_document):
    document = add_document(HANDBOOK)
    client = staff("reader", {env: [Action.READ]})

    page = text(client.get(page_of(document)))
    reingest = client.post(reverse("admin:retrieval_document_reingest", args=[document.pk]))
    delete = client.post(
        reverse("admin:retrieval_document_delete", args=[document.pk]), {"post": "yes"}
    )
    edit = client.post(page_of(document), {"title": "hijacked", "metadata": "{}"})

    assert "Ingest again" not in page
    assert (reingest.status_code, delete.status_code, edit.status_code) == (403, 403, 403)
    assert Document.objects.get(pk=document.pk).title == "Doc"


def test_the_reingest_action_leaves_documents_of_environments_without_edit(
    env, other_env, add_document, elsewhere, django_capture_on_commit_callbacks
):
    mine = add_document(HANDBOOK)
    Document.objects.update(status="failed", error="old")
    client = staff("editor", {env: [Action.READ, Action.EDIT], other_env: [Action.READ]})

    with django_capture_on_commit_callbacks(execute=True):
        client.post(LIST, {"action": "reingest", "_selected_action": [mine.pk, elsewhere.pk]})

    assert Document.objects.get(pk=mine.pk).status == "ready"
    assert Document.objects.get(pk=elsewhere.pk).status == "failed"


def test_deleting_a_batch_with_a_document_without_delete_refuses_it_all(
    env, other_env, add_document, elsewhere
):
    mine = add_document(HANDBOOK)
    client = staff("deleter", {env: [Action.READ, Action.DELETE], other_env: [Action.READ]})
    chosen = {"action": "delete_selected", "_selected_action": [mine.pk, elsewhere.pk]}

    confirmation = client.post(LIST, chosen)
    confirmed = client.post(LIST, {**chosen, "post": "yes"})

    assert "permission to delete" in text(confirmation)
    assert confirmed.status_code == 403
    assert Document.objects.count() == 2


def test_retrieval_page_searches_only_environments_the_user_may_read(
    env, other_env, library, elsewhere, make_agent
):
    agent = make_agent("helper", "rag", environment=other_env)
    client = staff("reader", {env: [Action.READ]})

    refused = client.get(SEARCH, {"environment": other_env.pk, "query": "trips"})
    no_agent = client.get(SEARCH, {"environment": env.pk, "agent": agent.pk, "query": "trips"})
    allowed = client.get(SEARCH, {"environment": env.pk, "query": "trips"})

    assert "Select a valid choice" in refused.context["form"].errors["environment"][0]
    assert "Select a valid choice" in no_agent.context["form"].errors["agent"][0]
    found = {node_id.split(":")[0] for node_id, _ in hits(allowed)}
    assert found
    assert str(elsewhere.pk) not in found
