"""The messages of a turn in OpenAI's chat shape, followed from a run's events: what run
records keep and what the agent HTTP contract answers (agents.protocols.respond)."""

from __future__ import annotations

from typing import Any

from agents.llm.base import Message, ToolCallPart
from agents.runtime.events import Event, TextDelta, ToolCall, ToolResult
from agents.runtime.messages import message_json, tool_call_json


class Transcript:
    """Assistant messages (with their `tool_calls`) and `role: tool` results, in order.

    Text streams in deltas and is held until a call or the end shows which message it
    belongs to; `close_text` turns what is held into an assistant message.
    """

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.text: list[str] = []

    def observe(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ToolCall):
            # The calls of one model step share the assistant message with the step's text.
            last = self.messages[-1] if self.messages else None
            if self.text or last is None or last["role"] != "assistant":
                last = message_json(Message("assistant", self.take_text()))
                self.messages.append(last)
            call = ToolCallPart(event.call_id, event.name, event.arguments)
            last.setdefault("tool_calls", []).append(tool_call_json(call))
        elif isinstance(event, ToolResult):
            result = Message("tool", event.content, tool_call_id=event.call_id, name=event.name)
            self.messages.append(message_json(result))

    def take_text(self) -> str:
        """The text held since the last message, which is no longer held."""
        text, self.text = "".join(self.text), []
        return text

    def close_text(self) -> None:
        if self.text:
            self.messages.append(message_json(Message("assistant", self.take_text())))
