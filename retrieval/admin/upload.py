"""The admin's upload of documents: one or several files into an environment the user may
CREATE in, through document_create like POST /v1/documents, answered at once and ingested
after the commit. The whole batch is checked before anything is stored: one bad file
refuses them all, each named with its reason."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.admin import AdminSite
from django.contrib.admin.helpers import AdminForm
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from agentbuilder.admin_forms import json_object_or_empty
from agentbuilder.api.middleware import ADMIN_UPLOAD_DOCUMENTS
from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User, request_user
from retrieval import services
from retrieval.access import Grant, document_access
from retrieval.models import Document

MAX_FILES = 20
FIELDSETS: list[tuple[str | None, dict[str, Any]]] = [
    (None, {"fields": ("environment", "file")}),
    ("Describe them", {"fields": ("title", "doc_type", "metadata")}),
]


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file input that takes several files; cleans to a list."""

    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data] if data else [single(None, initial)]
        return [single(data, initial)]


class MetadataField(forms.JSONField):
    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)  # not "null"


class DocumentUploadForm(forms.Form):
    # The user's environments, set in __init__.
    environment: forms.ModelChoiceField[Any] = forms.ModelChoiceField(
        queryset=None, help_text="Environments you may CREATE in."
    )
    file = MultipleFileField(
        label="Files",
        help_text="Plain text, Markdown, HTML or PDF; select several to upload them together.",
    )
    title = forms.CharField(
        max_length=500, required=False, help_text="For a single file; default: the file's name."
    )
    doc_type = forms.CharField(max_length=100, required=False, label="Document type")
    metadata = MetadataField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "style": "font-family:monospace"}),
        help_text='A JSON object for HxQL filters, given to every file, e.g. {"department": '
        '"HR", "year": 2025}.',
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.documents: list[Document] = []
        environments = document_access().environments_with(user, Grant.CREATE).order_by("name")
        cast(forms.ModelChoiceField, self.fields["environment"]).queryset = environments
        self.fields["file"].help_text += (
            f" At most {_size(settings.DOCUMENT_MAX_BYTES)} a file, {MAX_FILES} files, "
            f"{_size(_files_limit())} in all."
        )

    def clean_metadata(self) -> dict[str, Any]:
        return json_object_or_empty(self.cleaned_data["metadata"])

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        files: list[UploadedFile] = data.get("file") or []
        if len(files) > MAX_FILES:
            self.add_error("file", f"At most {MAX_FILES} files at once.")
        if len(files) > 1 and data.get("title"):
            self.add_error(
                "title", "A title names one file: leave it empty to name each after its file."
            )
        for upload in files:
            try:
                services.document_check(
                    data=_read(upload),
                    media_type=upload.content_type,
                    source_name=upload.name or "",
                )
            except DomainError as exc:
                self.add_error("file", f"{upload.name}: {exc.detail}")
        if not self.errors:
            self._store(data, files)
        return data

    def _store(self, data: dict[str, Any], files: list[UploadedFile]) -> None:
        # Written while validating, as the admin's ServiceForm does: a service's refusal
        # becomes a form error, and the savepoint takes back the batch's earlier documents.
        try:
            with transaction.atomic():
                document_access().require(self.user, data["environment"], Grant.CREATE)
                self.documents = [self._create(data, upload) for upload in files]
        except Invalid as exc:
            self.documents = []
            for item in exc.errors:
                self.add_error(None, f"{'.'.join(map(str, item.loc[1:]))}: {item.msg}")
        except DomainError as exc:
            self.documents = []
            self.add_error(None, exc.detail)

    def _create(self, data: dict[str, Any], upload: UploadedFile) -> Document:
        return services.document_create(
            environment_id=data["environment"].pk,
            user=self.user,
            title=data["title"] or upload.name or "",
            data=_read(upload),
            media_type=upload.content_type,
            source_name=upload.name or "",
            doc_type=data["doc_type"],
            metadata=data["metadata"],
        )


def _read(upload: UploadedFile) -> bytes:
    upload.seek(0)
    return upload.read()


def _files_limit() -> int:
    # What the body limit (agentbuilder.api.middleware) leaves for files, form fields aside.
    return ADMIN_UPLOAD_DOCUMENTS * int(settings.DOCUMENT_MAX_BYTES)


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:g} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def upload_page(site: AdminSite, request: HttpRequest) -> HttpResponse:
    """The form; on success, back to the list, where each document shows its status."""
    if request.method == "POST":
        form = DocumentUploadForm(request.POST, request.FILES, user=request_user(request))
        if form.is_valid():
            count = len(form.documents)
            messages.success(
                request,
                f"Uploaded {count} document{'s' if count != 1 else ''}: ingestion runs in the "
                "background, and the list shows when each is ready.",
            )
            return HttpResponseRedirect(reverse("admin:retrieval_document_changelist"))
    else:
        form = DocumentUploadForm(user=request_user(request), initial=_initial(request))
    context = {
        **site.each_context(request),
        "title": "Upload documents",
        "opts": Document._meta,
        "adminform": AdminForm(cast(Any, form), FIELDSETS, {}),  # a plain form does
        "form": form,
        "errors": form.errors,
        "files_limit": _files_limit(),
        "files_limit_shown": _size(_files_limit()),
    }
    return TemplateResponse(request, "admin/retrieval/document/upload.html", context)


def _initial(request: HttpRequest) -> dict[str, Any]:
    # The only environment there is to choose, chosen.
    environments = list(
        document_access().environments_with(request_user(request), Grant.CREATE)[:2]
    )
    return {"environment": environments[0].pk} if len(environments) == 1 else {}
