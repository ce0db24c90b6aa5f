"""`local.demo-v1`: a deterministic offline model.

It exists so that every path of the platform runs, demos and is tested with no account
anywhere. It is not clever, but it is honest. It goes by what the runtime says a call is
for (`ModelRequest.purpose`), never by the wording of a prompt:

- a conversation turn: it reads arithmetic English ("12 times 11", "subtract 3 from 10")
  and calls the tool that does the operation, or works it out itself when no tool does;
  otherwise it picks a tool by word overlap and reads numbers and quoted strings for its
  arguments; after tool results it states them; it says what images or documents it was
  sent and that it cannot use them;
- a forced tool: it fills the tool's schema from the text (`local_fill`); with
  `tool_choice` "required" and no tool picked, so does the best-matching tool, and with
  "none" it answers as if it had no tools (the client's tools of /v1/openai are tools
  like the agent's: it picks them by the same word overlap);
- a RAG answer: it quotes the sentences of the passages that best match the question;
- a query rewrite: the question's content words; a grounding check: word overlap; a
  judge's score: the share of the reference's words the answer has (`local_text`);
- a task: it restates its rendered prompt.

It counts its tokens as whitespace-separated words.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from agents.llm.base import (
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
from agents.llm.local_arith import (
    VERBS,
    arithmetic_tool,
    operation_arguments,
    read_operation,
    with_figures,
)
from agents.llm.local_fill import fill_schema
from agents.llm.local_text import (
    answer_from_passages,
    describe,
    grounding,
    judgement,
    received,
    search_query,
    words,
)

MODEL_ID = "local.demo-v1"

_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'|“([^”]+)”")


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
    if request.force_tool:
        spec = _tool(request, request.force_tool)
        if request.purpose == "grounding_check":
            return _call(spec, grounding(request.context, last.text), request)
        if request.purpose == "judge":
            return _call(spec, judgement(request.context), request)
        return _call(spec, fill_schema(spec.parameters, _source_text(request)), request)
    if request.purpose == "query_rewrite":
        return search_query(last.text)
    if request.purpose == "rag_answer":
        return answer_from_passages(request.context, _question(request))
    if request.purpose == "task":
        # The rendered prompt is the instruction; the offline model answers by restating it.
        return f"Done: {request.system.strip()}"
    if last.role == "tool":
        return _report_tool_results(request.messages)
    if request.tool_choice == "none":
        return _chat(replace(request, tools=()), last)
    step = _chat(request, last)
    if request.tool_choice == "required" and request.tools and isinstance(step, str):
        # Made to call a tool it did not pick: the tool sharing most words, else the first.
        tool = _pick_tool(request.tools, last.text)[0] or request.tools[0]
        return _call(tool, fill_schema(tool.parameters, _source_text(request)), request)
    return step


def _chat(request: ModelRequest, last: Message) -> ToolCallPart | str:
    text = last.text
    operation = read_operation(text)
    if operation is not None:
        tool = arithmetic_tool(request.tools, operation.op)
        if tool is not None:
            return _call(tool, operation_arguments(tool, operation), request)
    tool, missing = _pick_tool(request.tools, text)
    if tool is not None and not missing:
        return _call(tool, _arguments(tool, text), request)
    if operation is not None:
        answer = operation.worked_out()
        if request.tools:
            verb = VERBS[operation.op]
            answer = f"None of my tools {verb} numbers, so I worked it out myself: {answer}"
    elif tool is not None:
        answer = _ask_for(tool, missing)
    elif last.attachments and not text.strip():
        answer = ""
    else:
        answer = _plain_answer(text)
    if last.attachments:
        return f"{received(last.attachments)} {answer}".strip()
    return answer


def _tool(request: ModelRequest, name: str) -> ToolSpec:
    return next(t for t in request.tools if t.name == name)


def _call(spec: ToolSpec, arguments: dict[str, Any], request: ModelRequest) -> ToolCallPart:
    number = sum(len(m.tool_calls) for m in request.messages) + 1
    return ToolCallPart(f"tooluse_local_{number}", spec.name, json.dumps(arguments))


# ---------------------------------------------------------------- tools


def _name_words(tool: ToolSpec) -> set[str]:
    return words(re.sub(r"([a-z])([A-Z])", r"\1 \2", tool.name).replace("_", " "))


def _pick_tool(tools: tuple[ToolSpec, ...], text: str) -> tuple[ToolSpec | None, list[str]]:
    """Of the tools whose required arguments the message gives, the one sharing the most
    words with it, and no missing argument; failing that, the best tool the message names,
    with the arguments it lacks; else (None, [])."""
    asked = words(text)
    ranked = []
    for index, tool in enumerate(tools):
        score = len(asked & (_name_words(tool) | words(tool.description)))
        if score:
            ranked.append((-score, index, tool))
    named = None
    for _, _, tool in sorted(ranked, key=lambda r: (r[0], r[1])):
        given = _arguments(tool, text)
        missing = [n for n in tool.parameters.get("required", []) if n not in given]
        if not missing:
            return tool, []
        if named is None and asked & _name_words(tool):
            named = (tool, missing)
    return named or (None, [])


def _ask_for(tool: ToolSpec, missing: list[str]) -> str:
    """What the model needs to call a tool the user named."""
    properties = tool.parameters.get("properties", {})
    kinds = {(properties.get(n) or {}).get("type") for n in missing}
    them = "it" if len(missing) == 1 else "them"
    if kinds <= {"number", "integer"}:
        how = f"give {them} as {'a number' if them == 'it' else 'numbers'}, in figures or words"
    elif "number" in kinds or "integer" in kinds:
        how = "give numbers in figures or words, and text in quotes"
    else:
        how = f"put {them} in quotes"
    return f"I can use {tool.name}, but I need {_listed(missing)}: {how}."


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _arguments(tool: ToolSpec, text: str) -> dict[str, Any]:
    unquoted = _QUOTED.sub(" ", text)
    numbers = [float(n) for n in _NUMBER.findall(_strip_operator_minus(with_figures(unquoted)))]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    arguments: dict[str, Any] = {}
    for name, prop in tool.parameters.get("properties", {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
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


def _arguments_of(call: ToolCallPart) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- text answers


def _plain_answer(text: str) -> str:
    if not text:
        return "Hello! How can I help?"
    return f"You said: {text.strip()}"


def _question(request: ModelRequest) -> str:
    return next((m.text for m in reversed(request.messages) if m.role == "user"), "")


def _source_text(request: ModelRequest) -> str:
    """The text structured output is filled from: the user's words, or for a task agent
    the rendered prompt, which carries its inputs."""
    text = _question(request)
    if not text or request.purpose == "task":
        return request.system
    return text


def _word_deltas(text: str) -> list[str]:
    parts = re.findall(r"\S+\s*", text)
    return parts or [text]


def _count(text: str) -> int:
    return len(text.split())


def _count_input(request: ModelRequest) -> int:
    """Words of the prompt, the messages and the tools' descriptions. An attachment counts
    as the words that describe it: the offline model reads its description, not its bytes.
    The passages of `context` are not counted again: the prompt already shows them."""
    total = _count(request.system)
    for message in request.messages:
        total += _count(message.text) + sum(_count(c.arguments) + 1 for c in message.tool_calls)
        total += sum(_count(describe(a)) for a in message.attachments)
    for tool in request.tools:
        total += _count(tool.description) + 1
    return total
