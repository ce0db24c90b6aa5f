"""What every guardrail engine answers: a Verdict on one text at one stage.

Engines know nothing of Django: the service reads the catalog row and builds an engine
from its `engine` and `engine_config`, and the runtime calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

# `context`: retrieved passages and tool results, checked before the model reads them.
Stage = Literal["input", "output", "context"]
Action = Literal["NONE", "BLOCKED"]


@dataclass(frozen=True)
class Span:
    """Where in the checked text a detector found what it objects to."""

    start: int
    end: int
    label: str = ""


@dataclass(frozen=True)
class Verdict:
    action: Action = "NONE"
    score: float = 0.0  # 0..1: how sure the engine is that the text must be blocked
    spans: tuple[Span, ...] = field(default_factory=tuple)
    reason: str = ""

    @property
    def blocked(self) -> bool:
        return self.action == "BLOCKED"


PASS = Verdict()


class Detector(Protocol):
    """A local detector: pure Python, quick enough to run on every streamed window."""

    def check(self, text: str, stage: Stage) -> Verdict: ...


class Engine(Protocol):
    """Any engine, local or remote, as the runtime calls it."""

    async def acheck(self, text: str, stage: Stage) -> Verdict: ...
