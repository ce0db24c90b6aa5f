"""A past run or thread as the playground opens it to go on with (docs/api.md#playground):
its turns, oldest first, and whether the signed-in user's next message continues it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from agentbuilder.errors import NotFound
from agentbuilder.users import User
from agents.models import Agent, Run
from agents.selectors.runs import run_get, runs_visible

TURNS_SHOWN = 50  # the newest; a longer thread's older turns stay on its runs' pages


@dataclass(frozen=True)
class ThreadTurn:
    run_id: uuid.UUID
    version: int
    draft: bool
    status: str
    question: str
    answer: str
    error: str

    def as_json(self) -> dict[str, Any]:
        return {
            "runId": str(self.run_id),
            "version": self.version,
            "draft": self.draft,
            "status": self.status,
            "question": self.question,
            "answer": self.answer,
            "error": self.error,
        }


@dataclass(frozen=True)
class OpenedThread:
    """`continues`: the next message goes on in `thread_id` (the user's own thread); else
    it starts a new conversation and the turns are shown only."""

    thread_id: str
    continues: bool
    turns: tuple[ThreadTurn, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "continues": self.continues,
            "turns": [t.as_json() for t in self.turns],
        }


def thread_open(
    *, user: User, agent: Agent, run_id: uuid.UUID | None = None, thread_id: str = ""
) -> OpenedThread:
    """The run `run_id` of `agent` with the rest of its thread, or the user's thread
    `thread_id` with `agent`. A thread belongs to its caller (agents.runs.start's history):
    another caller's run, or a run with no thread, is shown and not continued. Raises
    NotFound for a run the user may not read or of another agent, and for a thread of the
    user's with no run of this agent."""
    if run_id is not None:
        run = run_get(user=user, environment=agent.environment, run_id=run_id)
        if run.agent_id != agent.pk:
            raise NotFound(f"Run '{run_id}' not found.")
        if not run.thread_id or run.caller_id != user.pk:
            return OpenedThread("", False, (_turn(run),))
        thread_id = run.thread_id
    runs = (
        runs_visible(user=user, environment=agent.environment)
        .filter(agent=agent, caller=user, thread_id=thread_id)
        .select_related("version")
        .only(*_FIELDS)
        .order_by("-started_at", "-id")[:TURNS_SHOWN]
    )
    turns = tuple(_turn(run) for run in reversed(runs)) if thread_id else ()
    if not turns:
        raise NotFound(f"Thread '{thread_id}' has no run of agent '{agent.name}'.")
    return OpenedThread(thread_id, True, turns)


_FIELDS = (
    "id",
    "status",
    "messages",
    "error",
    "draft_config",
    "started_at",
    "version__number",
)


def _turn(run: Run) -> ThreadTurn:
    messages = run.messages or []
    asked = [m for m in messages if m.get("role") == "user"]
    said = [m.get("content") for m in messages if m.get("role") == "assistant"]
    error = run.error or {}
    return ThreadTurn(
        run_id=run.pk,
        version=run.version.number,
        draft=run.draft_config is not None,
        status=run.status,
        question="\n".join(_asked(m) for m in asked),
        answer=next((text for text in reversed(said) if text), ""),
        error=f"{error['code']}: {error['message']}" if error.get("code") else "",
    )


def _asked(message: dict[str, Any]) -> str:
    """A user message's text; a task's inputs as JSON, as the playground shows them."""
    if "inputs" in message:
        return json.dumps(message["inputs"], ensure_ascii=False)
    return str(message.get("content") or "")
