"""POST /v1/agents/{agentId}/versions/{versionId}/process: the agent API protocol
(seeds/agent-api-protocol.txt, SPEC section 4).

`stream` (default true) answers server-sent events, one protocol object each; otherwise
one response object. Every error leaves in the protocol's style, a response with
`status: failed` and `error {code, message}`, under the status code of SPEC section 2.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Literal

from adrf.views import APIView as AsyncAPIView
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import ApiView
from agentbuilder.db import in_db
from agentbuilder.errors import ErrorItem, Invalid
from agents.api.invoke import FAILURE_STATUS, run_headers
from agents.api.views import AGENT_ID, ENVIRONMENT, VERSION_ID, agent_uuid
from agents.llm.base import Message as RuntimeMessage
from agents.protocols.agent_protocol import (
    AgentRequest,
    AgentResponse,
    DataContent,
    ImageContent,
    MessageType,
    ProcessEncoder,
    Role,
    TextContent,
    error_response,
    sse,
    whole_answer,
)
from agents.protocols.attachments import from_url
from agents.runs.request import CHAT_TYPES, RunRequest
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events, recorded_events
from agents.runtime.events import ResponseFailed

PROTOCOL = "process"

# The protocol's error codes for the refusals of SPEC section 2.
ERROR_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def runtime_messages(body: AgentRequest) -> tuple[RuntimeMessage, ...]:
    """The input as the runtime's messages: the text of each message, its data parts as
    JSON. System messages travel as user context, as on the native routes."""
    problems: list[ErrorItem] = []
    messages = []
    for i, message in enumerate(body.input):
        at = ("body", "input", i)
        if message.type != MessageType.MESSAGE:
            problems.append(
                ErrorItem(
                    (*at, "type"),
                    "only 'message' inputs are accepted; earlier turns "
                    "with their tool calls load from the session_id",
                )
            )
            continue
        if message.role is None:
            problems.append(ErrorItem((*at, "role"), "Field required", "missing"))
            continue
        texts = []
        images = []
        for j, part in enumerate(message.content or ()):
            if isinstance(part, TextContent):
                texts.append(part.text or "")
            elif isinstance(part, DataContent):
                texts.append(json.dumps(part.data, ensure_ascii=False))
            elif isinstance(part, ImageContent):
                try:
                    images.append(from_url("image", part.image_url or "", (*at, "content", j)))
                except Invalid as exc:
                    problems.extend(exc.errors)
        if not message.content:
            problems.append(ErrorItem((*at, "content"), "a message needs at least one part"))
        role: Literal["assistant", "user"] = (
            "assistant" if message.role == Role.ASSISTANT else "user"
        )
        if images and role == "assistant":
            problems.append(ErrorItem((*at, "content"), "only user messages may carry images"))
        messages.append(RuntimeMessage(role, "\n".join(texts), attachments=tuple(images)))
    if problems:
        raise Invalid(problems)
    return tuple(messages)


def _error_message(detail: Any) -> str:
    """SPEC section 2's `detail` (a string, or located items) as one message."""
    if isinstance(detail, list):
        items = []
        for item in detail:
            if not isinstance(item, dict):
                items.append(str(item))
                continue
            loc = [str(p) for p in item.get("loc", [])]
            path = ".".join(loc[1:] if loc[:1] == ["body"] else loc)
            items.append(f"{path}: {item.get('msg')}" if path else str(item.get("msg")))
        return "; ".join(items)
    return str(detail)


class ProcessView(AsyncAPIView, ApiView):
    upstream = True
    error_schema = AgentResponse  # a response with `status: failed` and its `error`

    @extend_schema(
        operation_id="agents_process",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT],
        request=AgentRequest,
        examples=[
            OpenApiExample(
                "question",
                value={
                    "input": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "text", "text": "What is 3 times 5?"}],
                        }
                    ],
                    "stream": False,
                },
                request_only=True,
            )
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR,
                description="With `stream` (the default): one protocol object a `data:` "
                "event. With `stream: false`, one response object.",
            ),
            (200, "application/json"): AgentResponse,
        },
        tags=["invoke"],
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        body, invocation = await in_db(self._start)(agentId, versionId)
        if body.stream:
            return _stream(invocation, body.session_id)
        return await _collect(invocation, body.session_id)

    def _start(self, agent_id: str, version_ref: str) -> tuple[AgentRequest, Invocation]:
        body = self.body(AgentRequest)
        messages = runtime_messages(body)
        request = RunRequest(
            user=self.request.user,
            environment=self.environment,
            agent_id=agent_uuid(agent_id),
            version_ref=version_ref,
            protocol=PROTOCOL,
            route="/process",
            agent_types=CHAT_TYPES,
            messages=messages,
            thread_id=body.session_id or "",
        )
        return body, invocation_start(request)

    def handle_exception(self, exc: Exception) -> Response:
        """Every refusal in the protocol's style; status and headers (X-Run-Id,
        WWW-Authenticate, Retry-After) as the platform's handler set them."""
        response = super().handle_exception(exc)
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        code = ERROR_CODES.get(response.status_code, "error")
        response.data = error_response(code, _error_message(detail))
        return response


async def _collect(invocation: Invocation, session_id: str | None) -> Response:
    encoder = ProcessEncoder(session_id)
    events = await collected_events(invocation)
    for event in whole_answer(events):
        encoder.encode(event)
    last = events[-1]
    status = FAILURE_STATUS.get(last.code, 502) if isinstance(last, ResponseFailed) else 200
    return Response(encoder.body(), status=status, headers=run_headers(invocation))


def _stream(invocation: Invocation, session_id: str | None) -> StreamingHttpResponse:
    async def frames() -> AsyncIterator[bytes]:
        encoder = ProcessEncoder(session_id)
        # aclosing: a client that leaves closes (and records) the run at once.
        async with aclosing(recorded_events(invocation)) as events:
            async for event in events:
                chunk = b"".join(sse(obj) for obj in encoder.encode(event))
                if chunk:
                    yield chunk

    response = StreamingHttpResponse(frames(), content_type="text/event-stream; charset=utf-8")
    for name, value in run_headers(invocation, stream=True).items():
        response[name] = value
    return response
