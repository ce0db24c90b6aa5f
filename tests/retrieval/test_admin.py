from __future__ import annotations

from django.test import Client

from retrieval.models import Document
from retrieval.services import document_create


def test_documents_admin_shows_status_and_chunks_and_reingests(
    admin_user, env, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        document = document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Handbook",
            data=b"Employees get 25 days of vacation. Requests go to the manager.",
            media_type="text/plain",
        )
    assert Document.objects.get(pk=document.pk).status == "ready"
    browser = Client()
    browser.force_login(admin_user)
    listing = browser.get("/admin/retrieval/document/").content.decode()
    assert "Handbook" in listing
    assert "ready" in listing

    Document.objects.filter(pk=document.pk).update(status="failed", error="old")
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(
            "/admin/retrieval/document/",
            {"action": "reingest", "_selected_action": [str(document.pk)]},
        )
    fresh = Document.objects.get(pk=document.pk)
    assert (fresh.status, fresh.error) == ("ready", "")
    assert fresh.chunks.count() >= 1
