"""Scripted doubles for the runtime, which runs without a database or HTTP: a provider that
answers each model call with the next scripted step, the pieces of a step, a tool agent's
config, and a guardrail detector that flags one word."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents.configs import config_parse
from agents.llm.base import (
    Finished,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    Usage,
)
from guardrails.engines.base import PASS, Span, Stage, Verdict
from guardrails.engines.local import LocalEngine
from guardrails.engines.rules import Rule

# A model call's events; a ProviderError among them is raised where it stands.
Step = list[ProviderEvent | ProviderError]


class ScriptedProvider:
    """Answers each model call with the next scripted step and keeps the requests."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        for event in self.steps.pop(0):
            if isinstance(event, ProviderError):
                raise event
            yield event


def call(name: str, arguments: str, call_id: str = "c1") -> ToolCallChunk:
    return ToolCallChunk(ToolCallPart(call_id, name, arguments))


def done(stop: str = "end_turn", tokens: tuple[int, int] = (10, 2)) -> Finished:
    return Finished(Usage(*tokens), stop)  # type: ignore[arg-type]


def answer(text: str = "Done.") -> Step:
    return [TextChunk(text), done()]


def tool_agent(*tools: dict[str, Any], max_iterations: int = 10, retries: int = 2) -> Any:
    return config_parse(
        "tool",
        {
            "llmModelId": "local.demo-v1",
            "tools": list(tools),
            "maxIterations": max_iterations,
            "inferenceConfig": {"maxRetries": retries},
        },
    )


def function(name: str, func_name: str | None = None) -> dict[str, Any]:
    return {
        "toolType": "function",
        "name": name,
        "description": name,
        "funcName": func_name or name,
    }


class WordDetector:
    """Blocks any text containing `word`; records every text it was shown."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.seen: list[str] = []

    def check(self, text: str, stage: Stage) -> Verdict:
        self.seen.append(text)
        at = text.find(self.word)
        if at < 0:
            return PASS
        match = Span(at, at + len(self.word), "word")
        return Verdict("BLOCKED", 1.0, (match,), kind="custom_word", detector="words", match=match)


def rule(detector: WordDetector, stages: tuple[Stage, ...] = ("input", "output")) -> Rule:
    return Rule("Words", LocalEngine(detector), frozenset(stages), "no (in)", "no (out)")
