"""Documents that cost more to read than their bounds allow (retrieval.bounded_extract): a
PDF whose pages share one Flate stream that decompresses to MiBs, a stream that alone
decompresses past the bound, a PDF of many pages or a text of many chunks, one that needs
more CPU than it is given. Each is read in a child process, stops where its bound is
reached (counted: the page it stopped at), and is `failed` with the reason, never left
`pending`, with no chunk stored; the API and the admin show the reason.

No test here times anything: what they count is where reading stopped and why."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from retrieval.bounded_extract import Limits, extract_pieces
from retrieval.extract import BoundExceeded
from retrieval.models import Chunk, Document, DocumentStatus
from tests.retrieval.pdfs import drawn_text, make_pdf, padded, shared_stream_pdf

pytestmark = pytest.mark.django_db

MiB = 2**20
PDF = "application/pdf"


@pytest.fixture
def post_pdf(owner_client: APIClient, django_capture_on_commit_callbacks: Any) -> Callable:
    """Upload a PDF through POST /v1/documents, run the ingestion its commit schedules,
    and answer GET /v1/documents/{id}."""

    def post(data: bytes, name: str = "bomb.pdf") -> dict[str, Any]:
        upload = SimpleUploadedFile(name, data, content_type=PDF)
        with django_capture_on_commit_callbacks(execute=True):
            posted = owner_client.post("/v1/documents", {"file": upload}, format="multipart")
        assert posted.status_code == 202, posted.content
        assert posted.json()["status"] == "pending"
        got = owner_client.get(f"/v1/documents/{posted.json()['id']}")
        assert got.status_code == 200
        return dict(got.json())

    return post


def assert_failed_without_chunks(document: dict[str, Any], bound: str) -> str:
    assert document["status"] == "failed", document
    assert bound in document["error"]
    assert not Chunk.objects.filter(document_id=document["id"]).exists()
    assert Document.objects.get(pk=document["id"]).chunk_count == 0
    return str(document["error"])


def stopped_at(reason: str) -> tuple[int, int]:
    match = re.search(r"stopped at page (\d+) of (\d+)", reason)
    assert match, reason
    return int(match[1]), int(match[2])


def test_pages_sharing_one_stream_each_count_its_decompressed_bytes(
    post_pdf: Callable, settings: Any
) -> None:
    """Three pages draw one stream of 600 KiB: the first page is read (600 KiB), the
    second would make 1.2 MiB of the 1 MiB allowed, so reading stops there."""
    settings.DOCUMENT_MAX_DECOMPRESSED_BYTES = MiB
    bomb = shared_stream_pdf(3, padded(600 * 1024))
    assert len(bomb) < 4096  # a few KiB sent, MiBs to read

    reason = assert_failed_without_chunks(post_pdf(bomb), "DOCUMENT_MAX_DECOMPRESSED_BYTES")

    assert f"more than {MiB} bytes" in reason
    assert stopped_at(reason) == (2, 3)


def test_one_stream_that_alone_decompresses_past_the_bound_is_not_inflated_further(
    post_pdf: Callable, settings: Any
) -> None:
    """64 MiB behind 64 KiB of Flate: pypdf's own output limit is lowered to the bound, so
    decompression stops after 1 MiB with the rest of the stream left unread."""
    settings.DOCUMENT_MAX_DECOMPRESSED_BYTES = MiB
    bomb = shared_stream_pdf(1, padded(64 * MiB))

    reason = assert_failed_without_chunks(post_pdf(bomb), "DOCUMENT_MAX_DECOMPRESSED_BYTES")

    remaining = re.search(r"Limit reached while decompressing\. (\d+) bytes remaining", reason)
    assert remaining, reason
    assert int(remaining[1]) > 0  # compressed input left: the 63 MiB after the bound
    assert "stopped at page 1" in reason


def test_a_pdf_of_many_pages_stops_once_its_text_makes_more_chunks_than_allowed(
    post_pdf: Callable, settings: Any
) -> None:
    """300 pages of about 60 tokens, at most 5 chunks of 40 tokens (200 tokens): reading
    stops at the page whose text passes 200 tokens, not at page 300."""
    settings.DOCUMENT_MAX_CHUNKS, settings.CHUNK_TOKENS, settings.CHUNK_OVERLAP = 5, 40, 8
    line = "Clause {n} says the tenant keeps the garden tidy and the gate shut at night."
    pages = [[line.format(n=n), line.format(n=n + 1), line.format(n=n + 2)] for n in range(300)]

    reason = assert_failed_without_chunks(post_pdf(make_pdf(pages)), "DOCUMENT_MAX_CHUNKS")

    page, of = stopped_at(reason)
    assert of == 300
    assert 2 <= page <= 5  # 60-odd tokens a page: past 200 by the fourth


def test_a_text_of_more_chunks_than_allowed_fails_with_their_number(
    owner_client: APIClient, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.DOCUMENT_MAX_CHUNKS, settings.CHUNK_TOKENS, settings.CHUNK_OVERLAP = 5, 40, 8
    text = " ".join(f"Sentence {n} is about the budget of year {n}." for n in range(60))

    with django_capture_on_commit_callbacks(execute=True):
        posted = owner_client.post("/v1/documents", {"title": "Long", "text": text}, format="json")
    document = owner_client.get(f"/v1/documents/{posted.json()['id']}").json()

    reason = assert_failed_without_chunks(document, "DOCUMENT_MAX_CHUNKS")
    made = re.search(r"makes (\d+) chunks, more than 5", reason)
    assert made, reason
    assert int(made[1]) > 5


def test_a_document_that_needs_more_cpu_than_allowed_is_stopped_by_the_kernel(
    post_pdf: Callable, settings: Any
) -> None:
    """The issue's shape at full size (three pages, one 2 MiB stream: seconds of pypdf a
    page) with one CPU second allowed. RLIMIT_CPU ends the child; on a machine too busy to
    give the niced child that second before the wall deadline, the deadline ends it. Either
    way this process was never the one reading it."""
    settings.DOCUMENT_EXTRACTION_SECONDS = 1.0
    bomb = shared_stream_pdf(3, drawn_text(2 * MiB))
    assert len(bomb) < 16 * 1024
    pid = os.getpid()

    reason = assert_failed_without_chunks(post_pdf(bomb), "DOCUMENT_EXTRACTION_SECONDS")

    assert os.getpid() == pid
    assert "more than 1 s of CPU" in reason or "did not finish within 40 s" in reason


def test_a_normal_pdf_is_read_in_the_child_within_the_default_bounds(post_pdf: Callable) -> None:
    pages = [[f"Page {n} of the handbook covers holidays and sick leave."] for n in range(20)]

    document = post_pdf(make_pdf(pages), name="handbook.pdf")

    assert (document["status"], document["error"]) == ("ready", "")
    stored = Document.objects.get(pk=document["id"])
    assert stored.chunk_count == Chunk.objects.filter(document=stored).count() > 0


def test_the_admin_lists_a_bombs_failure_with_its_reason(
    admin_user: Any, post_pdf: Callable, settings: Any
) -> None:
    settings.DOCUMENT_MAX_DECOMPRESSED_BYTES = MiB
    failed = post_pdf(shared_stream_pdf(3, padded(600 * 1024)))
    site = Client()
    site.force_login(admin_user)

    listing = html.unescape(site.get(reverse("admin:retrieval_document_changelist")).text)

    assert "doc-status-failed" in listing
    assert "DOCUMENT_MAX_DECOMPRESSED_BYTES" in listing
    assert Document.objects.get(pk=failed["id"]).status == DocumentStatus.FAILED


def test_extract_pieces_raises_the_bound_it_hit() -> None:
    limits = Limits(MiB, 2000, 256, 32, 30.0, 2**30)

    with pytest.raises(BoundExceeded, match=r"stopped at page 2 of 3"):
        extract_pieces(shared_stream_pdf(3, padded(600 * 1024)), PDF, limits)
