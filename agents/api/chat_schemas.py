"""The OpenAI shapes the chat completions routes answer with, for the OpenAPI document:
agents.protocols.chat_completions writes them (completion_body, error_body)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class OpenAIErrorObject(BaseModel):
    message: str
    type: str = Field(description="`invalid_request_error`, `rate_limit_error`, ...")
    param: str | None = Field(description="The request field at fault, if one is.")
    code: str | None


class OpenAIError(BaseModel):
    """Every refusal of a chat completions route, as OpenAI's SDKs read it."""

    error: OpenAIErrorObject


class CompletionMessage(BaseModel):
    role: Literal["assistant"]
    content: str | None
    refusal: str | None = None


class CompletionChoice(BaseModel):
    index: int
    message: CompletionMessage
    logprobs: None = None
    finish_reason: Literal["stop", "length", "tool_calls", "content_filter"]


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int = Field(description="Epoch seconds.")
    model: str = Field(description="The agent that answered: `name@version`.")
    llm_model: str | None = Field(None, description="The language model behind the agent.")
    choices: list[CompletionChoice]
    usage: CompletionUsage
    system_fingerprint: str | None = None
    custom_outputs: dict[str, Any] | None = Field(
        None, description="sourceNodes of a RAG agent, a guardrail's verdict."
    )
