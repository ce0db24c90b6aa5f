"""The native routes' request bodies, and how a chat body maps to runtime messages."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, model_validator

from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel
from agents.llm.base import Attachment, Message
from agents.protocols.attachments import from_base64, from_text
from agents.services.approvals import DecisionIn
from agents.webhooks.request import WebhookBody

BACKGROUND = (
    "Answer 202 at once with the run `queued`; a worker runs it. Follow it with "
    "GET /v1/runs/{id}/events, read it with GET /v1/runs/{id}."
)
# Qualifies this module's classes in the OpenAPI document where another shares a name.
SCHEMA_PREFIX = "Invoke"


class TextPart(CamelModel):
    type: Literal["text"]
    text: str


class Base64Source(CamelModel):
    type: Literal["base64"]
    media_type: str = Field(max_length=200, description="`image/png`, `application/pdf`, …")
    data: str = Field(description="The bytes, base64-encoded.")


class TextSource(CamelModel):
    """A document given as text (`text/plain` unless `mediaType` says otherwise)."""

    type: Literal["text"]
    media_type: str = Field("text/plain", max_length=200)
    data: str


class SourcePart(CamelModel):
    type: Literal["image", "document"]
    name: str | None = Field(None, max_length=200)
    source: Annotated[Base64Source | TextSource, Field(discriminator="type")]

    def attachment(self, at: tuple[str | int, ...]) -> Attachment:
        source, name = self.source, self.name or ""
        if isinstance(source, Base64Source):
            return from_base64(self.type, source.media_type, source.data, at, name=name)
        if self.type == "image":
            raise Invalid.at((*at, "source", "type"), "an image's source is base64")
        return from_text(source.media_type, source.data, at, name=name)


class InputMessage(CamelModel):
    role: Literal["system", "user", "assistant"]
    content: str | list[Annotated[TextPart | SourcePart, Field(discriminator="type")]]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    def attachments(self, at: tuple[str | int, ...]) -> tuple[Attachment, ...]:
        if isinstance(self.content, str):
            return ()
        return tuple(
            p.attachment((*at, j)) for j, p in enumerate(self.content) if isinstance(p, SourcePart)
        )


class InvokeRequest(CamelModel):
    messages: list[InputMessage] = Field(min_length=1, max_length=1000)
    guardrails: list[str] = Field(default_factory=list, max_length=20)
    thread_id: str | None = Field(None, max_length=100)
    hxql_query: str | None = None
    hybrid_search: StrictBool | None = None
    limit: int | None = Field(None, ge=1, le=1000)
    reranker_top_n: int | None = Field(None, ge=1, le=100)
    adjacent_chunk_range: int | None = Field(None, ge=0, le=10)
    adjacent_chunk_merge: StrictBool | None = None
    background: StrictBool = Field(False, description=BACKGROUND)
    webhook: WebhookBody | None = Field(
        None, description="This run's events also go here (docs/api.md#webhooks)."
    )


class InvokeTaskRequest(CamelModel):
    inputs: dict[str, Any]
    guardrails: list[str] = Field(default_factory=list, max_length=20)
    background: StrictBool = Field(False, description=BACKGROUND)
    webhook: WebhookBody | None = Field(
        None, description="This run's events also go here (docs/api.md#webhooks)."
    )


def runtime_messages(body: InvokeRequest) -> tuple[Message, ...]:
    """The request's messages as the runtime takes them. Raises Invalid."""
    # A request's system messages travel as user text: the agent's own system prompt is
    # its author's, and input guardrails check what the caller wrote, system role or not.
    messages = []
    for i, m in enumerate(body.messages):
        at = ("body", "messages", i, "content")
        if m.role == "assistant":
            if m.attachments(at):
                raise Invalid.at(at, "only user and system messages may carry images or documents")
            messages.append(Message("assistant", m.text()))
        else:
            messages.append(Message("user", m.text(), attachments=m.attachments(at)))
    return tuple(messages)


class Decision(CamelModel):
    approval_request_id: uuid.UUID
    decision: Literal["approve", "reject"]
    message: str = Field("", max_length=4000, description="Told to the model on a rejection.")


class ApprovalsBody(CamelModel):
    """POST /v1/runs/{runId}/approvals (docs/api.md#tool-approvals), and the playground's."""

    decisions: list[Decision] = Field(min_length=1, max_length=100)
    background: StrictBool = Field(
        False,
        description="Answer 202 at once and let the resumed run go on in the server; read "
        "or follow it with GET /v1/runs/{runId} and /events.",
    )

    def decided(self) -> list[DecisionIn]:
        return [DecisionIn(d.approval_request_id, d.decision, d.message) for d in self.decisions]

    @model_validator(mode="after")
    def _once_each(self) -> ApprovalsBody:
        seen: set[uuid.UUID] = set()
        for index, decision in enumerate(self.decisions):
            if decision.approval_request_id in seen:
                raise Invalid.at(
                    ("decisions", index, "approvalRequestId"),
                    "this request is decided twice in the body",
                )
            seen.add(decision.approval_request_id)
        return self
