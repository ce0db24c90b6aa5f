"""Documents and search (docs/api.md#documents), scoped to the request's environment.

Documents belong to an environment, so their permissions are the environment's: READ to
list and search, CREATE to upload, DELETE to delete (asked through retrieval.access).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from pydantic import Field
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import PageQuery, Pagination, paginate
from agentbuilder.api.parsers import JSONParser, MultiPartParser, loads_json
from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ENVIRONMENT, ApiRequest, ApiView, render
from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel, OutputModel, parse
from retrieval import selectors, services
from retrieval.access import Grant, document_access
from retrieval.configs import RagSettings
from retrieval.models import Document
from retrieval.rag import search_now, search_request

IDEMPOTENCY_KEY_MAX = 255
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    description="The same key from the same caller answers the first upload's document "
    "instead of storing a second one (409 if the upload differs).",
)


class DocumentText(CamelModel):
    title: str = Field(min_length=1, max_length=500)
    text: str = Field(min_length=1)
    doc_type: str = Field("", max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict)
    media_type: Literal["text/plain", "text/markdown", "text/html"] = "text/plain"


class DocumentForm(CamelModel):
    """The fields of a multipart upload beside its file; others are ignored."""

    model_config = CamelModel.model_config | {"extra": "ignore"}

    title: str = Field("", max_length=500, description="Default: the file's name.")
    doc_type: str = Field("", max_length=100)
    metadata: str = Field("{}", description="A JSON object, as text.")


class DocumentUpload(DocumentForm):
    """A multipart upload, as the OpenAPI document shows it."""

    file: bytes = Field(description="Text, Markdown, HTML or PDF.")


class DocumentQuery(PageQuery):
    status: Literal["pending", "ready", "failed"] | None = None


class DocumentOut(OutputModel):
    id: uuid.UUID
    title: str
    doc_type: str
    metadata: dict[str, Any]
    source_name: str
    media_type: str
    status: Literal["pending", "ready", "failed"]
    error: str
    chunk_count: int
    created_at: datetime
    ingested_at: datetime | None

    @classmethod
    def of(cls, d: Document) -> DocumentOut:
        return cls(
            id=d.pk,
            title=d.title,
            doc_type=d.doc_type,
            metadata=d.metadata,
            source_name=d.source_name,
            media_type=d.media_type,
            status=d.status,
            error=d.error,
            chunk_count=d.chunk_count,
            created_at=d.created_at,
            ingested_at=d.ingested_at,
        )


class DocumentAccepted(OutputModel):
    id: uuid.UUID
    status: Literal["pending", "ready", "failed"]


class DeletedDocument(OutputModel):
    document_id: uuid.UUID


class DocumentList(OutputModel):
    documents: list[DocumentOut]
    pagination: Pagination


class SearchBody(RagSettings):
    query: str = Field(min_length=1, max_length=10_000)


class SourceNode(OutputModel):
    model_config = OutputModel.model_config | {"alias_generator": None}

    id: str
    docId: str
    objectId: str
    chunkId: str
    score: float
    text: str


class SearchOut(OutputModel):
    nodes: list[SourceNode]


class EnvironmentScoped(ApiView):
    def require(self, grant: Grant) -> Any:
        environment = self.environment
        document_access().require(self.request.user, environment, grant)
        return environment

    def document(self, document_id: str, grant: Grant) -> Document:
        environment = self.require(grant)
        return selectors.document_get(
            environment_id=environment.pk,
            document_id=path_uuid(document_id, "documentId", "a document id"),
        )


class DocumentListView(EnvironmentScoped):
    conflicts = True  # an Idempotency-Key reused for another upload
    # Held to the upload limit by their path (agentbuilder.api.middleware.max_body_bytes).
    parser_classes = [JSONParser, MultiPartParser]

    @extend_schema(
        operation_id="documents_list",
        parameters=[*query_parameters(DocumentQuery), ENVIRONMENT],
        responses={200: DocumentList},
        tags=["documents"],
    )
    def get(self, request: ApiRequest) -> Response:
        environment = self.require(Grant.READ)
        query = self.query(DocumentQuery)
        documents = selectors.document_list(environment_id=environment.pk, status=query.status)
        items, pagination = paginate(documents, query)
        return render(
            DocumentList(documents=[DocumentOut.of(d) for d in items], pagination=pagination)
        )

    @extend_schema(
        operation_id="documents_create",
        request={"application/json": DocumentText, "multipart/form-data": DocumentUpload},
        examples=[
            OpenApiExample(
                "text",
                value={
                    "title": "Warranty",
                    "text": "The warranty covers parts and labour for two years.",
                    "metadata": {"year": 2024},
                },
                request_only=True,
                media_type="application/json",
            )
        ],
        responses={
            202: DocumentAccepted,
            200: OpenApiResponse(
                DocumentAccepted,
                description="The environment holds these bytes already: their document.",
            ),
        },
        parameters=[ENVIRONMENT, IDEMPOTENCY_KEY],
        tags=["documents"],
        summary="Upload a document (JSON text or a multipart file); answered at once, "
        "ingested after",
    )
    def post(self, request: ApiRequest) -> Response:
        environment = self.require(Grant.CREATE)
        upload = request.FILES.get("file")
        fields = self._upload_fields(upload) if upload is not None else self._text_fields()
        stored = services.document_upload(
            environment_id=environment.pk,
            user=request.user,
            idempotency_key=self._idempotency_key(),
            **fields,
        )
        document = stored.document
        # 200: nothing new was accepted, the environment holds these bytes as this document.
        status = 200 if stored.existing else 202
        return render(DocumentAccepted(id=document.pk, status=document.status), status=status)

    def _idempotency_key(self) -> str:
        key = self.request.headers.get("Idempotency-Key", "")
        if len(key) > IDEMPOTENCY_KEY_MAX or not key.isascii() or not key.isprintable():
            raise Invalid.at(
                ("header", "Idempotency-Key"),
                f"must be at most {IDEMPOTENCY_KEY_MAX} printable ASCII characters",
            )
        return key

    def _text_fields(self) -> dict[str, Any]:
        body = self.body(DocumentText)
        return {
            "title": body.title,
            "data": body.text.encode(),
            "media_type": body.media_type,
            "doc_type": body.doc_type,
            "metadata": body.metadata,
        }

    def _upload_fields(self, upload: Any) -> dict[str, Any]:
        form: Any = self.request.data  # a QueryDict: multipart fields are strings
        fields = parse(DocumentForm, form.dict(), "body")
        metadata = loads_json(fields.metadata or "{}", ("body", "metadata"))
        if not isinstance(metadata, dict):
            raise Invalid.at(("body", "metadata"), "must be a JSON object")
        return {
            "title": fields.title or upload.name,
            "data": upload.read(),
            "media_type": upload.content_type,
            "source_name": upload.name,
            "doc_type": fields.doc_type,
            "metadata": metadata,
        }


class DocumentDetailView(EnvironmentScoped):
    @extend_schema(
        operation_id="documents_get",
        parameters=[
            OpenApiParameter("documentId", OpenApiTypes.UUID, OpenApiParameter.PATH),
            ENVIRONMENT,
        ],
        responses={200: DocumentOut},
        tags=["documents"],
    )
    def get(self, request: ApiRequest, documentId: str) -> Response:
        return render(DocumentOut.of(self.document(documentId, Grant.READ)))

    @extend_schema(
        operation_id="documents_delete",
        parameters=[
            OpenApiParameter("documentId", OpenApiTypes.UUID, OpenApiParameter.PATH),
            ENVIRONMENT,
        ],
        responses={200: DeletedDocument},
        tags=["documents"],
    )
    def delete(self, request: ApiRequest, documentId: str) -> Response:
        document = self.document(documentId, Grant.DELETE)
        deleted = document.pk  # delete() clears the instance's pk
        services.document_delete(document=document)
        return render(DeletedDocument(document_id=deleted))


class SearchView(EnvironmentScoped):
    @extend_schema(
        operation_id="search",
        request=SearchBody,
        examples=[
            OpenApiExample(
                "filtered",
                value={
                    "query": "How long is the warranty?",
                    "hxqlQuery": "SELECT * FROM SysContent WHERE year >= 2024",
                    "limit": 5,
                },
                request_only=True,
            )
        ],
        responses={200: SearchOut},
        parameters=[ENVIRONMENT],
        tags=["documents"],
        summary="A RAG config's retrieval without a model: the nodes with their scores",
    )
    def post(self, request: ApiRequest) -> Response:
        environment = self.require(Grant.READ)
        body = self.body(SearchBody)
        nodes = search_now(
            environment_id=environment.pk,
            template=search_request(body),
            query=body.query,
        )
        return render(SearchOut(nodes=[SourceNode(**n.source_node()) for n in nodes]))
