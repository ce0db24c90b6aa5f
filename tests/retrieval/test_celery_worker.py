"""Ingestion as a deployment runs it, outside the test's transaction: without a broker, in
the request's process once it commits; with one, in a real `celery worker` process fed by a
real redis-server, on this test's database.

Every test here commits (the worker only sees committed rows), so they all live in this
module: pytest-django runs transactional tests last, and a file mixing both kinds would
flush the database under the tests scheduled after it."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kombu import pools

from agentbuilder.celery import app
from retrieval.models import Chunk, Document, DocumentStatus
from retrieval.services import document_create, document_reingest
from tests.conftest import client_for
from tests.support.processes import free_port, start_redis, start_worker, stop

TASK_SECONDS = 120

# serialized_rollback restores the rows migrations create (the default environment).
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HANDBOOK = "Employees get twenty five days of paid vacation. Requests go to the line manager."


# --- no broker: eager, after the commit ----------------------------------------------------


def test_without_a_broker_the_document_is_ready_when_the_post_returns(owner_client):
    assert app.conf.task_always_eager  # CELERY_BROKER_URL is unset in the test settings
    response = owner_client.post("/v1/documents", {"title": "Now", "text": HANDBOOK}, format="json")

    assert response.json()["status"] == "pending"  # the answer does not wait for Celery …
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == DocumentStatus.READY  # … but eager Celery ran after the commit
    assert document.chunks.count() == 1


def test_an_unexpected_ingestion_error_is_no_500_and_fails_the_document(owner, settings):
    settings.EMBEDDING_PROVIDER = "no-such-provider"
    client = client_for(owner)
    client.raise_request_exception = False

    response = client.post("/v1/documents", {"title": "T", "text": HANDBOOK}, format="json")

    assert response.status_code == 202
    document = Document.objects.get()
    assert document.status == DocumentStatus.FAILED
    assert "no-such-provider" in document.error


# --- a real broker and worker --------------------------------------------------------------


@dataclass
class Broker:
    url: str
    worker: subprocess.Popen[bytes]
    worker_log: Path

    def log(self) -> str:
        return self.worker_log.read_text(errors="replace")[-4000:]


def reset_producers() -> None:
    """Forget pooled broker connections, so the next send uses the current broker_url."""
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    if "amqp" in app.__dict__:
        app.amqp._producer_pool = None
    pools.reset()


@pytest.fixture(scope="module")
def redis_and_worker(
    django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Broker]:
    """redis-server and one worker for the module, on the test database (set up by now)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    workdir = tmp_path_factory.mktemp("celery")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis = start_redis(port, workdir)
    worker: subprocess.Popen[bytes] | None = None
    try:
        worker = start_worker(url, workdir / "worker.log")
        yield Broker(url, worker, workdir / "worker.log")
    finally:
        if worker is not None:
            stop(worker)
        stop(redis)


def not_here(**kwargs: Any) -> None:
    raise AssertionError("ingestion ran in the test process, not in the worker")


@pytest.fixture
def broker(redis_and_worker: Broker, settings: Any, monkeypatch: Any) -> Iterator[Broker]:
    """This process sends tasks to the broker instead of running them eagerly."""
    monkeypatch.setattr("retrieval.tasks.document_ingest", not_here)
    saved = (app.conf.broker_url, app.conf.task_always_eager)
    settings.CELERY_BROKER_URL = redis_and_worker.url
    app.conf.broker_url = redis_and_worker.url
    app.conf.task_always_eager = False
    reset_producers()
    try:
        yield redis_and_worker
    finally:
        app.conf.broker_url, app.conf.task_always_eager = saved
        reset_producers()


def wait_for(document: Document, status: str, broker: Broker) -> Document:
    deadline = time.monotonic() + TASK_SECONDS
    while time.monotonic() < deadline:
        current = Document.objects.get(pk=document.pk)
        if current.status == status:
            return current
        if broker.worker.poll() is not None:
            pytest.fail(f"the worker exited with {broker.worker.returncode}:\n{broker.log()}")
        time.sleep(0.1)
    pytest.fail(f"still {current.status} after {TASK_SECONDS}s; worker log:\n{broker.log()}")


def snapshot(document: Document) -> list[tuple[int, str, int]]:
    return list(
        Chunk.objects.filter(document=document)
        .order_by("position")
        .values_list("position", "text", "token_count")
    )


def test_worker_ingests_through_redis(broker, env, admin_user):
    text = " ".join(f"Rule {n}: badges are worn at all times in building {n}." for n in range(60))
    document = document_create(
        environment_id=env.pk,
        user=admin_user,
        title="Badge rules",
        data=text.encode(),
        media_type="text/plain",
    )
    ready = wait_for(document, DocumentStatus.READY, broker)

    assert ready.error == ""
    first = snapshot(document)
    assert len(first) > 1
    assert [position for position, _, _ in first] == list(range(len(first)))
    assert "Task retrieval.ingest_document[" in broker.log()

    # Re-ingestion through the worker replaces the chunks with the same ones.
    document_reingest(document=document)
    again = wait_for(document, DocumentStatus.READY, broker)
    assert again.ingested_at > ready.ingested_at
    assert snapshot(document) == first


def test_worker_marks_a_corrupt_upload_failed(broker, env, admin_user):
    document = document_create(
        environment_id=env.pk,
        user=admin_user,
        title="Broken",
        data=b"%PDF-1.4 this is not a PDF",
        media_type="application/pdf",
        source_name="broken.pdf",
    )

    failed = wait_for(document, DocumentStatus.FAILED, broker)

    assert "unreadable PDF" in failed.error
    assert not Chunk.objects.filter(document=document).exists()
