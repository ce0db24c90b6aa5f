"""`local.demo-v1`: a deterministic offline model.

It exists so that every path of the platform runs, demos and is tested with no account
anywhere. It is not clever, but it is honest: it picks tools by word overlap, reads numbers
and quoted strings for arguments, fills structured output from the text, quotes the best
matching sentences of a context, rewrites a question as its content words, and counts its
tokens as whitespace-separated words.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from agents.llm.base import (
    GROUNDING_TOOL,
    QUERY_REWRITE_PROMPT,
    TASK_INPUTS_HEADER,
    Finished,
    Message,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
    Usage,
)
from agents.llm.local_fill import fill_schema

MODEL_ID = "local.demo-v1"

# Operator symbols stand for the words a tool's name or description would use.
OPERATOR_WORDS = {
    "×": ("multiply", "times", "product"),
    "x": ("multiply", "times", "product"),
    "*": ("multiply", "times", "product"),
    "+": ("add", "plus", "sum"),
    "−": ("subtract", "minus", "difference"),
    "-": ("subtract", "minus", "difference"),
    "/": ("divide", "divided", "quotient"),
}
_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?")
_OPERATOR = re.compile(r"(?<=\d)\s*([×x*+−/-])\s*(?=-?\d)|(?<=\s)([×*+−/])(?=\s)")
_WORD = re.compile(r"[a-z]+")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'|“([^”]+)”")
_STOP = frozenset(
    """a an the is are was of to in on for and or with what whats how me my you your it this
    that please can could would i be by as at from do does""".split()  # noqa: SIM905
)


class LocalModel:
    """The offline provider. `delay` (seconds between deltas) lets benchmarks slow it."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        input_tokens = _count_input(request)
        step = _decide(request)
        output_tokens = 0
        if isinstance(step, ToolCallPart):
            output_tokens = _count(step.arguments) + 1
            yield ToolCallChunk(step)
            yield Finished(Usage(input_tokens, output_tokens), "tool_use")
            return
        for delta in _word_deltas(step):
            if self.delay:
                await asyncio.sleep(self.delay)
            output_tokens += _count(delta)
            yield TextChunk(delta)
        yield Finished(Usage(input_tokens, output_tokens), "end_turn")


def _decide(request: ModelRequest) -> ToolCallPart | str:
    last = request.messages[-1] if request.messages else Message(role="user")
    if request.force_tool == GROUNDING_TOOL:
        return _call(_tool(request, GROUNDING_TOOL), _grounding(last.text), request)
    if request.force_tool:
        spec = _tool(request, request.force_tool)
        return _call(spec, fill_schema(spec.parameters, _source_text(request)), request)
    if last.role == "tool":
        return _report_tool_results(request.messages)
    text = last.text
    if request.system == QUERY_REWRITE_PROMPT:
        return _search_query(text)
    if _has_context(request.system):
        return _answer_from_context(request.system, text)
    tool = _pick_tool(request.tools, text)
    if tool is not None:
        return _call(tool, _arguments(tool, text), request)
    return _plain_answer(request.system, text)


def _tool(request: ModelRequest, name: str) -> ToolSpec:
    return next(t for t in request.tools if t.name == name)


def _grounding(text: str) -> dict[str, Any]:
    """Grounded when each sentence of the answer shares most of its words with the context."""
    context, _, answer = text.partition("\n\nAnswer:\n")
    known = _words(context)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer) if _words(s)]
    supported = [len(_words(s) & known) / len(_words(s)) >= 0.6 for s in sentences]
    score = sum(supported) / len(supported) if supported else 1.0
    return {"grounded": all(supported), "score": round(score, 3)}


def _call(spec: ToolSpec, arguments: dict[str, Any], request: ModelRequest) -> ToolCallPart:
    number = sum(len(m.tool_calls) for m in request.messages) + 1
    return ToolCallPart(f"tooluse_local_{number}", spec.name, json.dumps(arguments))


# ---------------------------------------------------------------- tools


def _words(text: str) -> set[str]:
    words = {w for w in _WORD.findall(text.lower()) if w not in _STOP}
    for match in _OPERATOR.finditer(text.lower()):
        words.update(OPERATOR_WORDS[match.group(1) or match.group(2)])
    return words


def _pick_tool(tools: tuple[ToolSpec, ...], text: str) -> ToolSpec | None:
    asked = _words(text)
    best, best_score = None, 0
    for tool in tools:
        offered = _words(tool.name.replace("_", " ") + " " + tool.description)
        score = len(asked & offered)
        if score > best_score:
            best, best_score = tool, score
    return best


def _arguments(tool: ToolSpec, text: str) -> dict[str, Any]:
    numbers = [float(n) for n in _NUMBER.findall(_strip_operator_minus(text))]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    arguments: dict[str, Any] = {}
    for name, prop in tool.parameters.get("properties", {}).items():
        kind = prop.get("type")
        if kind in ("number", "integer") and numbers:
            value = numbers.pop(0)
            arguments[name] = int(value) if kind == "integer" or value.is_integer() else value
        elif kind == "string" and quoted:
            arguments[name] = quoted.pop(0)
    return arguments


def _strip_operator_minus(text: str) -> str:
    # In "7-2" the dash is the operator, not the sign of 2.
    return re.sub(r"(?<=\d)\s*-\s*(?=\d)", " - ", text).replace(" - ", " ")


def _report_tool_results(messages: tuple[Message, ...]) -> str:
    results = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.append(message)
    calls = {c.call_id: c for m in messages for c in m.tool_calls}
    sentences = []
    for result in reversed(results):
        call = calls.get(result.tool_call_id or "")
        name = result.name or (call.name if call else "the tool")
        if result.is_error:
            sentences.append(f"I could not use {name}: {result.text}")
            continue
        args = ", ".join(str(v) for v in _arguments_of(call).values()) if call else ""
        sentences.append(f"The result of {name}({args}) is {result.text}.")
    return " ".join(sentences)


# ---------------------------------------------------------------- text answers


def _arguments_of(call: ToolCallPart) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _search_query(question: str) -> str:
    """A question's content words in their order, as a search engine wants them."""
    words = [w for w in _WORD.findall(question.lower()) if w not in _STOP]
    return " ".join(dict.fromkeys(words)) or question


def _has_context(system: str) -> bool:
    return "Context:" in system


def _answer_from_context(system: str, question: str) -> str:
    context = system.split("Context:", 1)[1]
    context = context.split("\n\nQuestion:", 1)[0]
    asked = _words(question)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", context) if s.strip()]
    scored = sorted(
        ((len(asked & _words(s)), -i, s) for i, s in enumerate(sentences)), reverse=True
    )
    best = [s for score, _, s in scored[:2] if score > 0]
    if not best:
        return "I do not know: the documents do not say."
    return " ".join(best)


def _plain_answer(system: str, text: str) -> str:
    if text.startswith(TASK_INPUTS_HEADER):
        # A task agent: the rendered prompt is the instruction; answer by restating it.
        return f"Done: {system.strip()}"
    if not text:
        return "Hello! How can I help?"
    return f"You said: {text.strip()}"


def _source_text(request: ModelRequest) -> str:
    """The text structured output is filled from: the user's words, or for a task agent
    the rendered prompt, which carries its inputs."""
    text = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    if not text or text.startswith(TASK_INPUTS_HEADER):
        return request.system
    return text


def _word_deltas(text: str) -> list[str]:
    parts = re.findall(r"\S+\s*", text)
    return parts or [text]


def _count(text: str) -> int:
    return len(text.split())


def _count_input(request: ModelRequest) -> int:
    total = _count(request.system)
    for message in request.messages:
        total += _count(message.text) + sum(_count(c.arguments) + 1 for c in message.tool_calls)
    for tool in request.tools:
        total += _count(tool.description) + 1
    return total
