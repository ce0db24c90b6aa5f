"""The one codec between the runtime's messages and the JSON run records keep: OpenAI's
chat shape, which every protocol maps to."""

from __future__ import annotations

import json
from typing import Any

from agents.llm.base import Message, ToolCallPart

# The roles of a turn's stored messages that are conversation (a task's inputs are not).
MESSAGE_ROLES = ("user", "assistant", "tool")


def message_json(message: Message) -> dict[str, Any]:
    """A message as run records keep it."""
    data: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.attachments:
        # What was sent, not the bytes: a run record stays small and readable.
        data["attachments"] = [
            {"type": a.kind, "mediaType": a.media_type, "name": a.name, "bytes": len(a.data)}
            for a in message.attachments
        ]
    if message.tool_calls:
        data["tool_calls"] = [tool_call_json(c) for c in message.tool_calls]
    if message.role == "tool":
        data |= {"tool_call_id": message.tool_call_id, "name": message.name}
    return data


def tool_call_json(call: ToolCallPart) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def message_from_json(data: dict[str, Any]) -> Message:
    """A stored message back as the runtime's."""
    calls = tuple(
        ToolCallPart(c["id"], c["function"]["name"], c["function"].get("arguments") or "{}")
        for c in data.get("tool_calls") or ()
    )
    content = data.get("content")
    return Message(
        role=data["role"],
        text=content if isinstance(content, str) else json.dumps(content),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )
