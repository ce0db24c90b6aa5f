from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from retrieval.models import Document
from retrieval.services import document_reingest


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "environment", "doc_type", "status", "chunk_count", "created_at")
    list_filter = ("status", "environment", "doc_type", "media_type")
    search_fields = ("title", "source_name")
    list_select_related = ("environment",)
    readonly_fields = (
        "id",
        "environment",
        "source_name",
        "media_type",
        "status",
        "error",
        "chunk_count",
        "created_at",
        "created_by",
        "ingested_at",
    )
    fields = ("title", "doc_type", "metadata", *readonly_fields)
    actions = ["reingest"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # The uploaded bytes stay in the database, not in every list page.
        return super().get_queryset(request).defer("source")

    @admin.action(description="Ingest the selected documents again")
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            document_reingest(document=document)
        self.message_user(
            request, f"{queryset.count()} document(s) queued for ingestion.", messages.SUCCESS
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # uploads go through POST /v1/documents, which checks the content
