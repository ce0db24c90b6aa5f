"""The admin of documents (retrieval.Document): upload, status, chunks, re-ingest, delete and
a page to try retrieval.

A document's permissions are its environment's (READ to see, CREATE to upload, EDIT to
change or re-ingest, DELETE to delete), asked through retrieval.access as the documents
API asks them. Staff also need the model's own admin permission (view, add, change,
delete document), as for every other model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from agentbuilder.admin_forms import ServiceForm, json_object_or_empty, model_fields
from agentbuilder.users import request_user
from retrieval import selectors, services
from retrieval.access import Grant, document_access
from retrieval.admin.search import search_page
from retrieval.admin.upload import upload_page
from retrieval.models import Document

CHUNKS_PER_PAGE = 20
ERROR_SHOWN = 120  # characters of a failure's reason in the list; the page shows all
ABOUT = (
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


class DocumentChangeForm(ServiceForm):
    """Title, type and metadata, written through document_update (only those columns)."""

    title = forms.CharField(max_length=500)
    doc_type = forms.CharField(max_length=100, required=False, label="Document type")
    metadata = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "style": "font-family:monospace"}),
        help_text='A JSON object for HxQL filters, e.g. {"department": "HR", "year": 2025}.',
    )

    class Meta:
        model = Document
        exclude = model_fields(Document)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        document: Document = kwargs["instance"]
        kwargs["initial"] = {
            "title": document.title,
            "doc_type": document.doc_type,
            "metadata": document.metadata,
            **(kwargs.get("initial") or {}),
        }
        super().__init__(*args, **kwargs)

    def clean_metadata(self) -> dict[str, Any]:
        return json_object_or_empty(self.cleaned_data["metadata"])

    def apply(self, data: dict[str, Any]) -> Document:
        return services.document_update(
            document=self.instance,
            title=data["title"],
            doc_type=data["doc_type"],
            metadata=data["metadata"],
        )


class DocTypeFilter(admin.SimpleListFilter):
    """The document types in use, an empty one named as such (the admin would show "")."""

    title = "document type"
    parameter_name = "doc_type"
    NONE = "-"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        documents = model_admin.get_queryset(request).order_by("doc_type")
        types = documents.values_list("doc_type", flat=True).distinct()
        return [(t or self.NONE, t or "(none)") for t in types]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> QuerySet[Document]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(doc_type="" if value == self.NONE else value)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    form = DocumentChangeForm
    list_display = (
        "title",
        "environment",
        "doc_type",
        "status_shown",
        "failure",
        "chunk_count",
        "created_at",
    )
    list_filter = (
        "status",
        ("environment", admin.RelatedOnlyFieldListFilter),
        DocTypeFilter,
        "media_type",
    )
    search_fields = ("title", "source_name")
    list_select_related = ("environment",)
    readonly_fields = ABOUT
    fields = ("title", "doc_type", "metadata", *ABOUT)
    actions = ["reingest"]

    def get_urls(self) -> list[URLPattern]:
        site = self.admin_site
        return [
            path(
                "search/",
                site.admin_view(self.search_view),
                name="retrieval_document_search",
            ),
            path(
                "<path:object_id>/reingest/",
                site.admin_view(self.reingest_view),
                name="retrieval_document_reingest",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # The uploaded bytes stay in the database, not in every page.
        documents = super().get_queryset(request).defer("source")
        if request.user.is_superuser:
            return documents
        readable = (
            document_access().environments_with(request_user(request), Grant.READ).values("pk")
        )
        return documents.filter(environment__in=readable)

    # --- permissions: the model's admin permission, and the environment's grant ----------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return (
            super().has_add_permission(request)
            and document_access().environments_with(request_user(request), Grant.CREATE).exists()
        )

    def has_change_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or _holds(request, obj, Grant.EDIT))

    def has_delete_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or _holds(request, obj, Grant.DELETE))

    # --- pages ----------------------------------------------------------------------------

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        return upload_page(self.admin_site, request)

    def search_view(self, request: HttpRequest) -> TemplateResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return search_page(self.admin_site, request)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Document | None = None,
    ) -> Any:
        if obj is not None:
            chunks = Paginator(selectors.chunk_list(document_id=obj.pk), CHUNKS_PER_PAGE)
            context["chunks"] = chunks.get_page(request.GET.get("chunks"))
            if self.has_change_permission(request, obj):
                context["reingest_url"] = reverse(
                    "admin:retrieval_document_reingest", args=[obj.pk]
                )
        return super().render_change_form(request, context, add, change, form_url, obj)

    @staticmethod
    def _page(document: Document) -> str:
        return reverse("admin:retrieval_document_change", args=[document.pk])

    # --- writes, through the services the API uses ----------------------------------------

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through document_update while it validated."""

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        services.document_delete(document=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            services.document_delete(document=document)

    def get_deleted_objects(
        self, objs: Iterable[Document], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # The chunks go with their documents: counted, not listed one by one (thousands).
        # A document the user may not DELETE refuses the whole batch.
        documents = list(objs)
        envs = {d.environment_id for d in documents}
        deletable = set(
            document_access()
            .environments_with(request_user(request), Grant.DELETE)
            .filter(pk__in=envs)
            .values_list("pk", flat=True)
        )
        refused = {"document"} if envs - deletable else set()
        return (
            [f"{d.title} ({d.chunk_count} chunks)" for d in documents],
            {"documents": len(documents), "chunks": sum(d.chunk_count for d in documents)},
            refused,
            [],
        )

    @admin.action(description="Ingest the selected documents again", permissions=["change"])
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        editable = document_access().environments_with(request_user(request), Grant.EDIT)
        editable_ids = set(editable.values_list("pk", flat=True))
        chosen = list(queryset)
        allowed = [d for d in chosen if d.environment_id in editable_ids]
        for document in allowed:
            services.document_reingest(document=document)
        self.message_user(
            request, f"{len(allowed)} document(s) queued for ingestion.", messages.SUCCESS
        )
        if len(allowed) < len(chosen):
            self.message_user(
                request,
                f"{len(chosen) - len(allowed)} document(s) left alone: re-ingesting needs EDIT "
                "permission in their environment.",
                messages.WARNING,
            )

    @method_decorator(require_POST)
    def reingest_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = self.get_object(request, object_id)
        if document is None:
            raise Http404("No document you may see has this id.")
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        services.document_reingest(document=document)
        self.message_user(request, f"“{document.title}” is queued for ingestion.", messages.SUCCESS)
        return HttpResponseRedirect(self._page(document))

    # --- columns --------------------------------------------------------------------------

    @admin.display(description="status", ordering="status")
    def status_shown(self, document: Document) -> SafeString:
        return format_html(
            '<span class="doc-status doc-status-{}">{}</span>', document.status, document.status
        )

    @admin.display(description="error")
    def failure(self, document: Document) -> SafeString | str:
        if not document.error:
            return ""
        shown = document.error
        if len(shown) > ERROR_SHOWN:
            shown = shown[: ERROR_SHOWN - 1] + "…"
        return format_html('<span title="{}">{}</span>', document.error, shown)


def _holds(request: HttpRequest, document: Document, grant: Grant) -> bool:
    granted = document_access().environments_with(request_user(request), grant)
    return granted.filter(pk=document.environment_id).exists()
