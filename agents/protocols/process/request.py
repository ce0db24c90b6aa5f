"""The process protocol's request (AgentRequest), and how its input maps to runtime
messages."""

from __future__ import annotations

import json
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from agentbuilder.errors import ErrorItem, Invalid
from agentbuilder.wire import parse
from agents.llm.base import Message as RuntimeMessage
from agents.protocols.attachments import from_url
from agents.protocols.process.models import (
    AgentRequest,
    DataContent,
    ImageContent,
    MessageType,
    Role,
    TextContent,
)
from agents.services.approvals import DecisionIn

__all__ = ["AgentRequest", "approval_responses", "runtime_messages"]


class ApprovalResponse(BaseModel):
    """The data part of an `mcp_approval_response` message (the names OpenAI's Responses
    API gives the same item)."""

    model_config = ConfigDict(extra="forbid")

    approval_request_id: uuid.UUID
    approve: StrictBool
    reason: str = Field("", max_length=4000)


def approval_responses(body: AgentRequest) -> list[tuple[tuple[str | int, ...], DecisionIn]]:
    """The decisions a request's `mcp_approval_response` messages carry, each with where
    its id is in the body; none for a request that carries none. Raises Invalid at the
    path of a bad one, or of a `message` beside them (a decision resumes the run's own
    transcript: there is no new turn to take)."""
    if not any(m.type == MessageType.MCP_APPROVAL_RESPONSE for m in body.input):
        return []
    problems: list[ErrorItem] = []
    decisions = []
    for i, message in enumerate(body.input):
        at: tuple[str | int, ...] = ("body", "input", i)
        if message.type != MessageType.MCP_APPROVAL_RESPONSE:
            problems.append(
                ErrorItem(
                    (*at, "type"),
                    "a request with mcp_approval_response messages carries only those",
                )
            )
            continue
        parts = message.content or []
        if len(parts) != 1 or not isinstance(parts[0], DataContent):
            problems.append(ErrorItem((*at, "content"), "one data part: the decision"))
            continue
        where = (*at, "content", 0, "data")
        try:
            answer = parse(ApprovalResponse, parts[0].data or {}, *where)
        except Invalid as exc:
            problems.extend(exc.errors)
            continue
        decision: Literal["approve", "reject"] = "approve" if answer.approve else "reject"
        decisions.append(
            (
                (*where, "approval_request_id"),
                DecisionIn(answer.approval_request_id, decision, answer.reason),
            )
        )
    if problems:
        raise Invalid(problems)
    return decisions


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
