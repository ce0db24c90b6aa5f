"""No document is left `pending`: an upload is answered before its ingestion ends, an
ingestion killed with its process is taken up again by another (up to a bound, then
`failed` with the reason), and an Idempotency-Key makes a retried upload the same
document, concurrent twins included."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connections, transaction
from django.utils import timezone

from agents.access.tokens import token_encode
from retrieval.ingestion import documents_recover, ingestion_wait
from retrieval.models import Chunk, Document, DocumentStatus
from retrieval.services import document_create
from tests.conftest import client_for
from tests.live import ServerProcess, not_sweeping_here, server_process  # noqa: F401 (a fixture)

LIVENESS = 3.0  # seconds: leases of 2 s, renewed and swept every half second
SERVER_ENV = {"INGESTION_WORKERS": "2", "LIVENESS_SECONDS": str(LIVENESS)}
TRANSACTIONAL = pytest.mark.django_db(transaction=True, serialized_rollback=True)
pytestmark = pytest.mark.usefixtures("reseed_after_module")


def long_text(sentences: int, topic: str = "badges") -> str:
    return " ".join(
        f"Rule {n} about {topic}: item {n % 97} is kept in warehouse {n % 13}."
        for n in range(sentences)
    )


def pending() -> int:
    return Document.objects.filter(status=DocumentStatus.PENDING).count()


def wait_for(condition: Callable[[], bool], seconds: float) -> float:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, f"not within {seconds}s"
        time.sleep(0.1)
    return time.monotonic() - start


# ---------------------------------------------------------------- answered at once


@TRANSACTIONAL
def test_the_202_comes_while_the_document_is_still_pending(owner_client: Any, settings: Any):
    settings.INGESTION_WORKERS = 2  # the threads of `make run`, not the tests' inline mode
    text = long_text(5000)  # about 330 KB: seconds of chunking, embedding and indexing

    started = time.monotonic()
    response = owner_client.post("/v1/documents", {"title": "Big", "text": text}, format="json")
    answered = time.monotonic() - started
    status_at_answer = Document.objects.get(pk=response.json()["id"]).status

    assert response.status_code == 202
    assert response.json()["status"] == "pending"
    assert status_at_answer == DocumentStatus.PENDING  # the answer did not wait for ingestion
    assert ingestion_wait(120)
    ingested = time.monotonic() - started
    document = Document.objects.get(pk=response.json()["id"])
    assert (document.status, document.error, document.attempts) == (DocumentStatus.READY, "", 1)
    assert document.chunk_count == Chunk.objects.filter(document=document).count() > 100
    assert document.lease_until is None
    print(f"\n330 KB upload: 202 after {answered:.2f}s, ready after {ingested:.2f}s")
    assert answered < ingested / 2


# ---------------------------------------------------------------- processes that die


def upload(port: int, token: str, title: str, text: str, key: str = "") -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    connection.request("POST", "/v1/documents", json.dumps({"title": title, "text": text}), headers)
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    return response.status, body


@TRANSACTIONAL
@pytest.mark.usefixtures("not_sweeping_here")
def test_ingestions_killed_with_their_server_are_taken_up_by_the_next_one(
    owner: Any, tmp_path: Path
) -> None:
    token = token_encode(user_id=owner.pk, environment_id=None)[0]
    victim = ServerProcess(tmp_path / "victim.log", **SERVER_ENV)
    try:
        for n in range(20):
            status, _ = upload(victim.port, token, f"Manual {n}", long_text(1500, f"topic {n}"))
            assert status == 202
        time.sleep(0.5)  # some ingesting, the rest waiting for one of the two threads
    finally:
        victim.kill()
    left_pending = pending()
    assert left_pending > 0, "the server finished before it was killed: upload more"

    with server_process(tmp_path / "next.log", **SERVER_ENV) as survivor:
        connection = http.client.HTTPConnection("127.0.0.1", survivor.port, timeout=30)
        connection.request("GET", "/v1/documents", headers={"Authorization": f"Bearer {token}"})
        assert connection.getresponse().status == 200  # it serves: it sweeps
        recovered = wait_for(lambda: pending() == 0, 120)
        log = survivor.output()

    statuses = Counter(Document.objects.values_list("status", flat=True))
    attempts = Counter(Document.objects.values_list("attempts", flat=True))
    print(
        f"\nkill -9 during 20 uploads: {left_pending} pending; 0 pending {recovered:.1f}s "
        f"after the next server's first request: {dict(statuses)}, attempts {dict(attempts)}"
    )
    assert statuses == {"ready": 20}, log
    assert "its ingestion stopped with its process" in log
    assert all(d.chunk_count > 0 for d in Document.objects.all())


@pytest.mark.django_db
def test_a_document_whose_ingestions_keep_dying_is_failed_after_the_bounded_attempts(
    env: Any, admin_user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.INGESTION_MAX_ATTEMPTS = 3
    with django_capture_on_commit_callbacks(execute=False):  # as if it died before ingesting
        again, given_up, alive = (
            document_create(
                environment_id=env.pk,
                user=admin_user,
                title=title,
                data=f"{title}. {long_text(40)}".encode(),
                media_type="text/plain",
            )
            for title in ("again", "given up", "alive")
        )
    past = timezone.now() - timedelta(seconds=1)
    Document.objects.filter(pk=again.pk).update(attempts=2, lease_until=past)
    Document.objects.filter(pk=given_up.pk).update(attempts=3, lease_until=past)
    Document.objects.filter(pk=alive.pk).update(attempts=1)  # its lease still runs

    assert documents_recover() == 2

    again.refresh_from_db()
    given_up.refresh_from_db()
    alive.refresh_from_db()
    assert (again.status, again.attempts, again.chunk_count > 0) == ("ready", 3, True)
    assert given_up.status == DocumentStatus.FAILED
    assert "stopped 3 times" in given_up.error
    assert not Chunk.objects.filter(document=given_up).exists()
    assert alive.status == DocumentStatus.PENDING


# ---------------------------------------------------------------- Idempotency-Key


@pytest.mark.django_db
def test_the_same_idempotency_key_from_the_same_caller_is_the_same_document(
    owner: Any, stranger: Any, env: Any
) -> None:
    from agents.access.permissions import Action, grant

    grant(stranger, Action.CREATE, env)
    body = {"title": "Handbook", "text": "Twenty five days of paid vacation."}
    mine = client_for(owner)
    key = {"HTTP_IDEMPOTENCY_KEY": "upload-7f3a"}

    first = mine.post("/v1/documents", body, format="json", **key)
    retried = mine.post("/v1/documents", body, format="json", **key)
    # Their key is theirs: another upload (the same bytes would be the first document).
    theirs_body = {**body, "text": "Their own text."}
    theirs = client_for(stranger).post("/v1/documents", theirs_body, format="json", **key)
    other = mine.post("/v1/documents", {**body, "text": "Something else."}, format="json", **key)
    unkeyed = mine.post("/v1/documents", body, format="json")
    bad = mine.post("/v1/documents", body, format="json", HTTP_IDEMPOTENCY_KEY="x" * 256)

    assert (first.status_code, retried.status_code, theirs.status_code) == (202, 202, 202)
    assert retried.json()["id"] == first.json()["id"]
    assert theirs.json()["id"] != first.json()["id"]
    assert other.status_code == 409
    # Without a key the same bytes are still the same document (docs/api.md#documents).
    assert (unkeyed.status_code, unkeyed.json()["id"]) == (200, first.json()["id"])
    assert bad.status_code == 400
    assert bad.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    assert Document.objects.count() == 2


@TRANSACTIONAL
def test_concurrent_uploads_with_one_key_make_one_document(owner: Any, env: Any) -> None:
    body = {"title": "Handbook", "text": "Twenty five days of paid vacation."}
    answers: list[Any] = []

    def twin() -> None:
        try:
            client = client_for(owner)
            answers.append(
                client.post("/v1/documents", body, format="json", HTTP_IDEMPOTENCY_KEY="twin")
            )
        finally:
            connections.close_all()  # this thread's, back to the pool

    # The first upload's row exists, uncommitted, when its twin looks: the twin sees no
    # document, inserts, waits on the key's unique index, and loses once the first commits.
    thread = threading.Thread(target=twin)
    with transaction.atomic():
        first = document_create(
            environment_id=env.pk,
            user=owner,
            title=body["title"],
            data=body["text"].encode(),
            media_type="text/plain",
            idempotency_key="twin",
        )
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive()  # waiting on the index
    thread.join(30)

    [answer] = answers
    assert answer.status_code == 202
    assert answer.json()["id"] == str(first.pk)
    assert Document.objects.count() == 1
