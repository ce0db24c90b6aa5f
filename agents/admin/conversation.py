"""A run read as a conversation (the run page and the thread page): its stored messages
(agents/runtime/messages.py's shape) as chat bubbles, each tool call beside its result, a
guardrail's block as a notice; its usage as a small table; its retrieval hits with their
documents' titles. Plain data for the templates in agents/templates/admin/agents/run/."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from agents.admin.timeline import Notice, guardrail_notice, shown


@dataclass(frozen=True)
class Bubble:
    kind: ClassVar[str] = "bubble"  # what the template draws
    role: str  # user, assistant, system
    text: str
    attachments: tuple[str, ...] = ()  # what was attached, by name (the bytes are not kept)


@dataclass(frozen=True)
class ToolUse:
    kind: ClassVar[str] = "tool"
    name: str
    arguments: str  # pretty JSON where the model wrote JSON
    result: str | None  # None: no result came back (the run ended first)


@dataclass(frozen=True)
class Blocked:
    kind: ClassVar[str] = "blocked"
    notice: Notice


@dataclass(frozen=True)
class Failure:
    kind: ClassVar[str] = "failure"
    code: str
    message: str


Item = Bubble | ToolUse | Blocked | Failure


def chat(run_messages: list[Any], steps: list[Any], error: Any = None) -> list[Item]:
    """The turn in reading order. A guardrail's notice goes before the answer it replaced
    (or last, where no answer came), as does a failed run's error."""
    results = {
        m.get("tool_call_id"): _text(m.get("content"))
        for m in run_messages
        if isinstance(m, dict) and m.get("role") == "tool"
    }
    items: list[Item] = []
    for message in run_messages:
        if isinstance(message, dict):
            items.extend(_items(message, results))
    ending: list[Item] = [
        Blocked(notice)
        for step in steps
        if isinstance(step, dict) and (notice := guardrail_notice(step)) is not None
    ]
    if isinstance(error, dict):
        ending.append(Failure(str(error.get("code", "")), str(error.get("message", ""))))
    last = items[-1] if items else None
    if isinstance(last, Bubble) and last.role == "assistant" and ending:
        return [*items[:-1], *ending, last]
    return [*items, *ending]


def _items(message: dict[str, Any], results: dict[Any, str]) -> list[Item]:
    role = str(message.get("role", ""))
    if role == "tool":
        return []  # shown with the call it answers
    items: list[Item] = []
    text = _text(message.get("content"))
    attached = message.get("attachments") or ()
    names = tuple(str(a.get("name") or a.get("type") or "") for a in attached)
    if text or names:
        items.append(Bubble(role, text, names))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        items.append(
            ToolUse(
                name=str(function.get("name", "")),
                arguments=shown(function.get("arguments") or "{}"),
                result=shown(results[call.get("id")]) if call.get("id") in results else None,
            )
        )
    return items


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else shown(content)


def input_preview(run_messages: list[Any], length: int = 80) -> str:
    """The first user message's text, cut to `length` characters."""
    for message in run_messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return cut(_text(message.get("content")), length)
    return ""


def cut(text: str, length: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


@dataclass(frozen=True)
class UsageRow:
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal | None


def usage_rows(models_usage: dict[str, Any], tokens_usage: dict[str, Any]) -> list[UsageRow]:
    """A row per model the run called (its models_usage), or one row of its total tokens
    for a run recorded before usage was kept by model."""
    if not models_usage:
        if not tokens_usage:
            return []
        models_usage = {"": {**tokens_usage, "cost_usd": None}}
    return [
        UsageRow(
            model=model,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cached_input_tokens=int(usage.get("cached_input_tokens") or 0),
            cost_usd=None if usage.get("cost_usd") is None else Decimal(str(usage["cost_usd"])),
        )
        for model, usage in models_usage.items()
    ]


@dataclass(frozen=True)
class Hit:
    doc_id: str
    chunk_id: str
    title: str  # "" where the document is gone
    snippet: str
    score: float


def hits(steps: list[Any], titles: dict[str, str], texts: dict[str, str]) -> list[Hit]:
    """The retrieval steps' hits, in order, with their documents' titles and a snippet of
    each chunk's text (both by id, read by the caller)."""
    return [
        Hit(
            doc_id=str(hit.get("docId", "")),
            chunk_id=str(hit.get("chunkId", "")),
            title=titles.get(str(hit.get("docId", "")), ""),
            snippet=cut(texts.get(str(hit.get("chunkId", "")), ""), 240),
            score=float(hit.get("score") or 0.0),
        )
        for step in steps
        if isinstance(step, dict) and step.get("type") == "retrieval"
        for hit in step.get("hits") or ()
        if isinstance(hit, dict)
    ]
