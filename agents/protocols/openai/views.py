"""The OpenAI-compatible base, `/v1/openai` (docs/api.md#openai): what the OpenAI SDKs call
with `base_url=".../v1/openai"`.

`GET models` lists the agents the caller may invoke as OpenAI models (an agent's name is
the `model` of a chat completion), `GET models/{model}` is one of them, and
`POST chat/completions` runs the agent `model` names as `/v1/chat/completions` does, but
answers with OpenAI's semantics (agents.protocols.openai): one assistant message, the
same streamed or not, the agent's own tool activity only in `agentbuilder` extension
objects, and the client's `tools` beside the agent's. Every error is OpenAI's error body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import BaseModel
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import ENVIRONMENT, AsyncApiView, render
from agentbuilder.db import in_db
from agentbuilder.errors import NotFound
from agents.api.views import CALL_DEPTH
from agents.models import Agent
from agents.protocols.chat_completions.request import ChatCompletionRequest
from agents.protocols.chat_completions.views import (
    ANSWERS,
    COMPLETION_REQUEST,
    ModelChatCompletionsView,
    OpenAIAnswers,
    answer_tools,
)
from agents.protocols.openai.encoder import MessageEncoder, OpenAICompletion, completion_body
from agents.protocols.openai.request import OpenAIChatCompletionRequest
from agents.runs.start import Invocation
from agents.runtime.events import Event
from agents.selectors.agents import agent_list_invocable


class OpenAIModel(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str

    @classmethod
    def of(cls, agent: Agent) -> OpenAIModel:
        return cls(
            id=agent.name,
            created=int(agent.created_at.timestamp()),
            owned_by=agent.environment.name,
        )


class OpenAIModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[OpenAIModel]


class OpenAIModelListView(OpenAIAnswers, AsyncApiView):
    @extend_schema(
        operation_id="openai_models_list",
        parameters=[ENVIRONMENT],
        responses={200: OpenAIModelList},
        tags=["openai"],
        summary="The agents the caller may invoke, as OpenAI models",
    )
    async def get(self, request: Request) -> Response:
        return await in_db(self._list)()

    def _list(self) -> Response:
        agents = agent_list_invocable(user=self.request.user, environment=self.environment)
        return render(OpenAIModelList(data=[OpenAIModel.of(a) for a in agents]))


class OpenAIModelDetailView(OpenAIAnswers, AsyncApiView):
    not_found_code = "model_not_found"

    @extend_schema(
        operation_id="openai_models_get",
        parameters=[OpenApiParameter("model", str, OpenApiParameter.PATH), ENVIRONMENT],
        responses={200: OpenAIModel},
        tags=["openai"],
        summary="One agent the caller may invoke, as an OpenAI model",
    )
    async def get(self, request: Request, model: str) -> Response:
        return await in_db(self._get)(model)

    def _get(self, model: str) -> Response:
        agents = agent_list_invocable(user=self.request.user, environment=self.environment)
        agent = agents.filter(name__iexact=model).first()
        if agent is None:
            raise NotFound(f"The model '{model}' does not exist or you do not have access to it.")
        return render(OpenAIModel.of(agent))


CLIENT_TOOL_REQUEST = OpenApiExample(
    "client tool",
    summary="A tool the client runs: a call of it ends the completion with `tool_calls`",
    value={
        "model": "calculator",
        "messages": [{"role": "user", "content": 'What is the weather in "Paris"?'}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The weather in a city",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
    },
    request_only=True,
)


OPENAI_ANSWERS = {
    (200, "application/json"): OpenApiResponse(
        OpenAICompletion,
        description="A `chat.completion`; with `stream: true`, server-sent events.",
    ),
    (200, "text/event-stream"): ANSWERS[(200, "text/event-stream")],
}


class OpenAIChatCompletionsView(ModelChatCompletionsView):
    request_class = OpenAIChatCompletionRequest

    @extend_schema(
        operation_id="openai_chat_completions",
        parameters=[ENVIRONMENT, CALL_DEPTH],
        request=OpenAIChatCompletionRequest,
        examples=[COMPLETION_REQUEST, CLIENT_TOOL_REQUEST],
        responses=OPENAI_ANSWERS,
        tags=["openai"],
        summary="OpenAI chat completions with the agent that `model` names",
    )
    async def post(self, request: Request) -> Any:
        return await super().post(request)

    def route_fields(self, body: ChatCompletionRequest) -> dict[str, Any]:
        assert isinstance(body, OpenAIChatCompletionRequest)
        return {
            "client_tools": body.client_tools(),
            "tool_choice": body.run_tool_choice(),
            "parallel_tool_calls": body.parallel_tool_calls is not False,
        }

    def encoder(
        self, body: ChatCompletionRequest, invocation: Invocation
    ) -> Callable[[Event], list[bytes]]:
        encoder = MessageEncoder(
            include_usage=body.include_usage,
            client_tools=_client_tools(invocation),
            answer_tools=answer_tools(invocation),
            answered_by=invocation.answered_by,
        )
        return encoder.encode

    def answer(
        self, body: ChatCompletionRequest, invocation: Invocation, events: list[Event]
    ) -> dict[str, Any]:
        return completion_body(
            events,
            client_tools=_client_tools(invocation),
            answer_tools=answer_tools(invocation),
            answered_by=invocation.answered_by,
        )


def _client_tools(invocation: Invocation) -> frozenset[str]:
    return frozenset(tool.name for tool in invocation.run_input.client_tools)
