"""invoke, invoke-stream, invoke-task, invoke-task-stream (SPEC section 4).

Async from the request to the last byte: the database is read before the stream starts
and written after it ends, never while the model is talking.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace
from typing import Annotated, Any, Literal

from adrf.views import APIView as AsyncAPIView
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from pydantic import BaseModel, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import ApiView
from agentbuilder.db import in_db
from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel
from agents.api.views import AGENT_ID, ENVIRONMENT, VERSION_ID, agent_uuid
from agents.llm.base import Attachment, Message
from agents.protocols.attachments import from_base64, from_text
from agents.protocols.native import NdjsonEncoder, response_body
from agents.rag import OVERRIDES as RAG_OVERRIDES
from agents.runs.request import CHAT_TYPES, TASK_TYPES, RunRequest
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events, recorded_events
from agents.runtime.events import ResponseFailed

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------- bodies


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
    hybrid_search: bool | None = None
    limit: int | None = Field(None, ge=1, le=1000)
    reranker_top_n: int | None = Field(None, ge=1, le=100)
    adjacent_chunk_range: int | None = Field(None, ge=0, le=10)
    adjacent_chunk_merge: bool | None = None


class InvokeTaskRequest(CamelModel):
    inputs: dict[str, Any]
    guardrails: list[str] = Field(default_factory=list, max_length=20)


# The answer of `invoke` and `invoke-task` (SPEC section 4), for the OpenAPI document: the
# encoder (agents.protocols.native.response_body) writes it.
class OutputText(CamelModel):
    type: Literal["output_text"]
    text: str


class FunctionCallItem(CamelModel):
    type: Literal["function_call"]
    status: Literal["completed"]
    call_id: str
    name: str
    arguments: str = Field(description="The call's arguments as a JSON string.")


class MessageItem(CamelModel):
    type: Literal["message"]
    status: Literal["completed"]
    role: Literal["assistant"]
    content: list[OutputText]


class TokenUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class InvokeResponse(CamelModel):
    """The response object. A tool agent whose answer is a `structured_output` call answers
    with the validated object itself instead."""

    object: Literal["response"]
    id: str
    created_at: int = Field(description="Epoch seconds.")
    model: str
    output: list[Annotated[FunctionCallItem | MessageItem, Field(discriminator="type")]]
    usage: TokenUsage
    custom_outputs: dict[str, Any] | None = Field(
        None, description="sourceNodes and ragMode of a RAG agent, a guardrail's verdict."
    )


STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# A failed run's status on non-streaming routes: the client's fault is a 400, a model that
# timed out a 504, anything else the model or a tool did a 502.
FAILURE_STATUS = {"provider_timeout": 504, "invalid_request": 400, "template_limit": 400}


def _messages(body: InvokeRequest) -> tuple[Message, ...]:
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


class _InvokeBase(AsyncAPIView, ApiView):
    upstream = True
    protocol = "native"
    route = "/invoke or /invoke-stream"
    agent_types: tuple[str, ...] = CHAT_TYPES
    stream = False

    async def start(self, agent_id: str, version_id: str) -> Invocation:
        return await in_db(self._start)(agent_id, version_id)

    def _start(self, agent_id: str, version_ref: str) -> Invocation:
        if self.agent_types == TASK_TYPES:
            task = self.body(InvokeTaskRequest)
            request = self._request(agent_id, version_ref)
            request = replace(request, inputs=task.inputs, guardrails=tuple(task.guardrails))
        else:
            chat = self.body(InvokeRequest)
            messages = _messages(chat)
            request = replace(
                self._request(agent_id, version_ref),
                messages=messages,
                guardrails=tuple(chat.guardrails),
                thread_id=chat.thread_id or "",
                # Field names, not the wire's camelCase: agents.rag.OVERRIDES names them so.
                rag_overrides=chat.model_dump(
                    include=set(RAG_OVERRIDES), exclude_none=True, by_alias=False
                ),
            )
        return invocation_start(request)

    def _request(self, agent_id: str, version_ref: str) -> RunRequest:
        return RunRequest(
            user=self.request.user,
            environment=self.environment,
            agent_id=agent_uuid(agent_id),
            version_ref=version_ref,
            protocol=self.protocol,
            route=self.route,
            agent_types=self.agent_types,
        )

    async def answer(self, agent_id: str, version_id: str) -> Any:
        invocation = await self.start(agent_id, version_id)
        if self.stream:
            return _ndjson(invocation)
        return await _collect(invocation)


def run_headers(invocation: Invocation, *, stream: bool = False) -> dict[str, str]:
    headers = {"X-Run-Id": str(invocation.run_id)}
    return {**STREAM_HEADERS, **headers} if stream else headers


async def _collect(invocation: Invocation) -> Response:
    events = await collected_events(invocation)
    headers = run_headers(invocation)
    last = events[-1]
    if isinstance(last, ResponseFailed):
        status = FAILURE_STATUS.get(last.code, 502)
        return Response({"detail": f"{last.code}: {last.message}"}, status=status, headers=headers)
    return Response(response_body(events), headers=headers)


def _ndjson(invocation: Invocation) -> StreamingHttpResponse:
    async def lines() -> AsyncIterator[bytes]:
        encoder = NdjsonEncoder()
        # aclosing: when the client leaves, the run is closed (and recorded) at once,
        # not whenever the garbage collector gets to it.
        async with aclosing(recorded_events(invocation)) as events:
            async for event in events:
                line = encoder.encode(event)
                if line is not None:
                    yield line

    response = StreamingHttpResponse(lines(), content_type="text/plain; charset=utf-8")
    for name, value in run_headers(invocation, stream=True).items():
        response[name] = value
    return response


QUESTION = OpenApiExample(
    "question",
    value={"messages": [{"role": "user", "content": "What is 3 times 5?"}]},
    request_only=True,
)
TASK_INPUTS = OpenApiExample(
    "inputs",
    summary="The task agent's inputSchema decides the inputs",
    value={"inputs": {"text": "The warranty covers parts for two years.", "audience": "buyers"}},
    request_only=True,
)
STREAM_DOC = {
    (200, "text/plain"): OpenApiResponse(
        OpenApiTypes.STR,
        description="NDJSON: one event a line (`response.created` ... `response.completed` "
        "or `response.failed`), `text/plain; charset=utf-8`.",
    )
}


class InvokeView(_InvokeBase):
    @extend_schema(
        operation_id="agents_invoke",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        request=InvokeRequest,
        examples=[QUESTION],
        responses={200: InvokeResponse},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeStreamView(_InvokeBase):
    stream = True

    @extend_schema(
        operation_id="agents_invoke_stream",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        request=InvokeRequest,
        examples=[QUESTION],
        responses=STREAM_DOC,
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeTaskView(_InvokeBase):
    route = "/invoke-task or /invoke-task-stream"
    agent_types = TASK_TYPES

    @extend_schema(
        operation_id="agents_invoke_task",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        request=InvokeTaskRequest,
        examples=[TASK_INPUTS],
        responses={200: InvokeResponse},
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)


class InvokeTaskStreamView(InvokeTaskView):
    stream = True

    @extend_schema(
        operation_id="agents_invoke_task_stream",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        request=InvokeTaskRequest,
        examples=[TASK_INPUTS],
        responses=STREAM_DOC,
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.answer(agentId, versionId)
