"""The process protocol's request (AgentRequest), and how its input maps to runtime
messages."""

from __future__ import annotations

import json
from typing import Literal

from agentbuilder.errors import ErrorItem, Invalid
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

__all__ = ["AgentRequest", "runtime_messages"]


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
