"""Reads of documents. The caller's environment permission is checked by the agents side;
these take the environment the caller may act in."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from django.db.models.functions import Left

from agentbuilder.errors import NotFound
from retrieval.models import Chunk, Document


def document_list(*, environment_id: Any, status: str | None = None) -> QuerySet[Document]:
    """The documents of an environment, newest first, optionally of one status."""
    documents = Document.objects.defer("source").filter(environment_id=environment_id)
    if status:
        documents = documents.filter(status=status)
    return documents.order_by("-created_at", "id")


def document_get(*, environment_id: Any, document_id: uuid.UUID) -> Document:
    """One document of an environment. Raises NotFound."""
    document = (
        Document.objects.defer("source")
        .filter(pk=document_id, environment_id=environment_id)
        .first()
    )
    if document is None:
        raise NotFound(f"Document '{document_id}' not found.")
    return document


def document_titles(*, document_ids: list[str]) -> dict[str, str]:
    """The titles of documents a run's sources named, by id (deleted ones left out)."""
    rows = Document.objects.filter(pk__in=set(document_ids)).values_list("pk", "title")
    return {str(pk): title for pk, title in rows}


def chunk_snippets(*, chunk_ids: list[str], length: int = 300) -> dict[str, str]:
    """The first `length` characters of the chunks a run's hits named, by id (deleted ones
    left out)."""
    pks = {int(pk) for pk in chunk_ids if str(pk).isdigit()}
    rows = Chunk.objects.filter(pk__in=pks).values_list("pk", Left("text", length))
    return {str(pk): text for pk, text in rows}


def chunk_list(*, document_id: uuid.UUID) -> QuerySet[Chunk]:
    """A document's chunks in order, without their embeddings and text-search vectors."""
    return (
        Chunk.objects.filter(document_id=document_id)
        .only("id", "document_id", "position", "text", "token_count", "start", "end")
        .order_by("position")
    )
