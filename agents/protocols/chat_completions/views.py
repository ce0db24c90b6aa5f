"""OpenAI chat completions (docs/api.md#chat-completions, agent-chat-completions-api.txt).

`POST /v1/agents/{agentId}/versions/{versionId}/chat/completions` runs that version;
`POST /v1/chat/completions` runs the agent that `model` names in the caller's environment
(`calculator`, `calculator@3`, `calculator@prod`; names ignore case; no version means the
latest).

Both answer as OpenAI does, so its SDKs work unmodified: a `chat.completion`, or SSE chunks
when `stream` is true (agents.protocols.chat_completions, over agents.protocols.views), and
every refusal as OpenAI's `{"error": {"message", "type", "param", "code"}}` with the status
the SDK maps to its exceptions. While nothing happens (a slow tool, a slow model) the
stream sends an SSE comment every KEEPALIVE_SECONDS so that proxies and clients keep the
connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from pydantic import BaseModel
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.errors import exception_handler
from agentbuilder.api.negotiation import JsonAnswers
from agentbuilder.api.views import ENVIRONMENT
from agentbuilder.db import in_db
from agentbuilder.errors import Invalid
from agents.api.views import AGENT_ID, CALL_DEPTH, VERSION_ID, agent_uuid
from agents.configs import StructuredOutputTool, ToolAgentConfig
from agents.protocols.chat_completions.encoder import (
    KEEPALIVE,
    ChatCompletion,
    ChunkEncoder,
    completion_body,
)
from agents.protocols.chat_completions.errors import (
    ERROR_CODES,
    ERROR_TYPES,
    OpenAIError,
    error_body,
    failed_answer,
    invalid_message,
)
from agents.protocols.chat_completions.request import (
    ChatCompletionRequest,
    mcp_requests,
    model_reference,
)
from agents.protocols.views import ProtocolView, run_headers, streamed
from agents.runs.start import Invocation, invocation_start
from agents.runs.stream import collected_events
from agents.runtime.events import Event, ResponseFailed
from agents.selectors.versions import version_ref_parse

KEEPALIVE_SECONDS = 15.0
PROTOCOL = "chat.completions"


def openai_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The project's handler (status, WWW-Authenticate, X-Run-Id), then OpenAI's body."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    status = response.status_code
    param: str | None = None
    code = ERROR_CODES.get(status)
    if status == 404:
        code = getattr(context.get("view"), "not_found_code", "not_found")
    if isinstance(exc, Invalid):
        message, param, code = invalid_message(exc)
    else:
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        if isinstance(detail, list):  # located items of a body the parser refused
            message = "; ".join(str(item.get("msg")) for item in detail)
            code = str(detail[0].get("type")) if detail else code
        else:
            message = str(detail or response.status_text)
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    response.data = error_body(message, kind, code, param)
    return response


class OpenAIAnswers:
    """A view that answers as OpenAI does: JSON whatever `Accept` says, OpenAI's errors."""

    content_negotiation_class: type[BaseContentNegotiation] = JsonAnswers
    not_found_code = "not_found"
    error_schema: type[BaseModel] = OpenAIError

    def get_exception_handler(self) -> Any:
        return openai_exception_handler


class _ChatCompletionsBase(OpenAIAnswers, ProtocolView):
    protocol = PROTOCOL
    route = "/chat/completions"
    request_class: type[ChatCompletionRequest] = ChatCompletionRequest

    async def complete(self, agent_id: uuid.UUID | None, version_ref: str) -> Any:
        body, invocation = await in_db(self._start)(agent_id, version_ref)
        if body.stream:
            return streamed(
                invocation,
                self.encoder(body, invocation),
                "text/event-stream",
                keepalive=(KEEPALIVE_SECONDS, KEEPALIVE),
            )
        events = await collected_events(invocation)
        headers = run_headers(invocation)
        last = events[-1]
        if isinstance(last, ResponseFailed):
            status, failure, extra = failed_answer(last)
            return Response(failure, status=status, headers={**headers, **extra})
        return Response(self.answer(body, invocation, events), headers=headers)

    def encoder(
        self, body: ChatCompletionRequest, invocation: Invocation
    ) -> Callable[[Event], list[bytes]]:
        """The seed's layout: every message of the turn in chunks of its own."""
        encoder = ChunkEncoder(
            include_usage=body.include_usage,
            answer_tools=answer_tools(invocation),
            answered_by=invocation.answered_by,
        )
        return encoder.encode

    def answer(
        self, body: ChatCompletionRequest, invocation: Invocation, events: list[Event]
    ) -> dict[str, Any]:
        return completion_body(events, answered_by=invocation.answered_by)

    def route_fields(self, body: ChatCompletionRequest) -> dict[str, Any]:
        """What this route's body adds to the RunRequest, past what every route reads."""
        return {}

    def _start(
        self, agent_id: uuid.UUID | None, version_ref: str
    ) -> tuple[ChatCompletionRequest, Invocation]:
        body = self.body(self.request_class)
        messages = body.runtime_messages()
        name = ""
        if agent_id is None:
            name, version_ref = model_reference(body.model)
            try:
                version_ref_parse(version_ref)
            except Invalid:
                raise Invalid.at(
                    ("body", "model"),
                    "the version after '@' must be a number, 'latest', an alias or a version id",
                ) from None
        invocation = invocation_start(
            self.run_request(
                agent_id,
                version_ref,
                # `model` is looked up in the run's own statement, with the caller's grants
                # and the version: one read of them, as on the per-agent route.
                agent_name=name,
                messages=messages,
                stream=body.stream,
                # The document's iteration is user → model → tool call → tool result →
                # model: `iteration_limit` rounds of tools, then the model may still answer.
                max_iterations=body.iteration_limit + 1,
                mcp_servers=mcp_requests(body),
                **self.route_fields(body),
            )
        )
        return body, invocation


def answer_tools(invocation: Invocation) -> frozenset[str]:
    """The agent's structured_output tools: a call of one may be its answer."""
    config = invocation.spec.config
    if not isinstance(config, ToolAgentConfig):
        return frozenset()
    return frozenset(t.name for t in config.tools if isinstance(t, StructuredOutputTool))


COMPLETION_REQUEST = OpenApiExample(
    "question",
    summary="`model` names the agent (on the per-version route it may be left out)",
    value={"model": "calculator", "messages": [{"role": "user", "content": "What is 3 times 5?"}]},
    request_only=True,
)
ANSWERS = {
    (200, "application/json"): OpenApiResponse(
        ChatCompletion, description="A `chat.completion`; with `stream: true`, server-sent events."
    ),
    (200, "text/event-stream"): OpenApiResponse(
        OpenApiTypes.STR,
        description="`chat.completion.chunk` objects, one a `data:` event, then `data: [DONE]`.",
    ),
}


class ChatCompletionsView(_ChatCompletionsBase):
    @extend_schema(
        operation_id="agents_chat_completions",
        parameters=[AGENT_ID, VERSION_ID, ENVIRONMENT, CALL_DEPTH],
        request=ChatCompletionRequest,
        examples=[COMPLETION_REQUEST],
        responses=ANSWERS,
        tags=["invoke"],
        summary="OpenAI chat completions with an agent version",
    )
    async def post(self, request: Request, agentId: str, versionId: str) -> Any:
        return await self.complete(agent_uuid(agentId), versionId)


class ModelChatCompletionsView(_ChatCompletionsBase):
    not_found_code = "model_not_found"

    @extend_schema(
        operation_id="chat_completions",
        parameters=[ENVIRONMENT, CALL_DEPTH],
        request=ChatCompletionRequest,
        examples=[COMPLETION_REQUEST],
        responses=ANSWERS,
        tags=["invoke"],
        summary="OpenAI chat completions with the agent that `model` names",
    )
    async def post(self, request: Request) -> Any:
        return await self.complete(None, "latest")
