"""The playground's request body: one turn of a conversation, or a task agent's inputs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agentbuilder.wire import CamelModel
from agents.llm.base import Message


class PlaygroundRequest(CamelModel):
    version: str = Field("latest", min_length=1, max_length=60)
    message: str | None = Field(None, max_length=100_000)  # tool and RAG agents
    thread_id: str | None = Field(None, max_length=100)
    inputs: dict[str, Any] | None = None  # task agents
    # "Try without saving": a config run in place of `version`'s, validated as a save is
    # and never saved as a version (errors at ["body", "draft", …]).
    draft: dict[str, Any] | None = None

    def messages(self) -> tuple[Message, ...]:
        return (Message("user", self.message),) if self.message is not None else ()
