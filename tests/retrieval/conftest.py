"""Documents ingested the way production ingests them: `document_create`, then the Celery
task the commit schedules (eager without a broker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agents.models import Environment
from retrieval.models import Document
from retrieval.services import document_create


@pytest.fixture
def add_document(
    env: Environment, admin_user: Any, django_capture_on_commit_callbacks: Any
) -> Callable[..., Document]:
    def add(
        text: str | bytes,
        *,
        title: str = "Doc",
        environment: Environment | None = None,
        media_type: str = "text/plain",
        source_name: str = "",
        doc_type: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> Document:
        with django_capture_on_commit_callbacks(execute=True):
            document = document_create(
                environment_id=(environment or env).pk,
                user=admin_user,
                title=title,
                data=text.encode() if isinstance(text, str) else text,
                media_type=media_type,
                source_name=source_name,
                doc_type=doc_type,
                metadata=metadata,
            )
        document.refresh_from_db()
        return document

    return add
