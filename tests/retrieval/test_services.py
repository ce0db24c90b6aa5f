"""Uploads as the services store them: the same bytes are one document per environment
(docs/api.md#documents), also when two uploads race, and copies stored before content
hashes are kept (migration 0008)."""

from __future__ import annotations

import hashlib
from importlib import import_module
from threading import Barrier, Thread
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from retrieval.models import Document
from retrieval.services import document_upload

pytestmark = pytest.mark.django_db

TEXT = b"Every full-time employee earns 25 days of paid vacation per calendar year."


def upload(env: Any, user: Any, title: str = "Handbook", data: bytes = TEXT) -> Any:
    return document_upload(
        environment_id=env.pk, user=user, title=title, data=data, media_type="text/plain"
    )


def test_same_bytes_under_another_title_are_the_first_document(env, admin_user):
    first = upload(env, admin_user)

    again = upload(env, admin_user, title="Handbook (copy)")

    assert not first.existing
    assert again.existing
    assert again.document.pk == first.document.pk
    assert Document.objects.get().content_hash == hashlib.sha256(TEXT).hexdigest()


def test_other_bytes_are_another_document(env, admin_user):
    upload(env, admin_user)

    other = upload(env, admin_user, data=TEXT + b" Public holidays do not count.")

    assert not other.existing
    assert Document.objects.count() == 2


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_uploads_of_the_same_bytes_at_once_store_one(env, admin_user):
    barrier = Barrier(2)
    results: list[Any] = []

    def race() -> None:
        barrier.wait()
        try:
            results.append(upload(env, admin_user))
        finally:
            connection.close()

    threads = [Thread(target=race) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert Document.objects.count() == 1
    assert sorted(r.existing for r in results) == [False, True]
    assert {r.document.pk for r in results} == {Document.objects.get().pk}


def test_backfill_hashes_the_oldest_copy_and_keeps_the_others(env, admin_user):
    oldest = Document.objects.create(
        environment=env, title="a", media_type="text/plain", source=TEXT
    )
    copy = Document.objects.create(environment=env, title="b", media_type="text/plain", source=TEXT)
    other = Document.objects.create(
        environment=env, title="c", media_type="text/plain", source=b"other"
    )
    backfill = import_module("retrieval.migrations.0008_document_content_hash").backfill

    backfill(apps, None)

    hashes = dict(Document.objects.values_list("pk", "content_hash"))
    assert hashes == {
        oldest.pk: hashlib.sha256(TEXT).hexdigest(),
        copy.pk: "",
        other.pk: hashlib.sha256(b"other").hexdigest(),
    }
