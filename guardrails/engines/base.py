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
# What a block found. The first five are attacks on the model; the rest are what the word
# lists and Bedrock's policies look for.
Kind = Literal[
    "override",  # overriding or ignoring the instructions
    "extraction",  # extracting the system prompt or secrets
    "role_change",  # jailbreak role-play, a new persona, fake role delimiters
    "hidden",  # an attack hidden or encoded: base64, hex, rot13, backwards, invisible text
    "indirect",  # instructions addressed to a model inside data (the context stage)
    "profanity",
    "hate",
    "insult",
    "sexual",
    "violence",
    "misconduct",
    "denied_topic",
    "sensitive_information",
    "custom_word",
    "ungrounded",
]
KIND_WORDS: dict[Kind, str] = {
    "override": "instruction override",
    "extraction": "system prompt extraction",
    "role_change": "role change",
    "hidden": "hidden or encoded text",
    "indirect": "instructions hidden in data",
    "profanity": "profanity",
    "hate": "hate speech",
    "insult": "insult",
    "sexual": "sexual content",
    "violence": "violence",
    "misconduct": "misconduct",
    "denied_topic": "denied topic",
    "sensitive_information": "sensitive information",
    "custom_word": "blocked word",
    "ungrounded": "ungrounded answer",
}
# Attacks on the model's instructions: in data the model reads, each is an indirect one.
_ON_INSTRUCTIONS: frozenset[Kind | None] = frozenset({"override", "extraction", "role_change"})


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
    kind: Kind | None = None  # what was found, where the engine can tell
    detector: str = ""  # what decided: "rules", "learned classifier", "Bedrock guardrail", …
    match: Span | None = None  # the one of `spans` that decided, where there is one

    @property
    def blocked(self) -> bool:
        return self.action == "BLOCKED"


PASS = Verdict()


def kind_at(kind: Kind | None, stage: Stage) -> Kind | None:
    """The kind as reported at `stage`: at the context stage an override, extraction or role
    change is written into data the model reads, an indirect attack; hidden text stays
    hidden, and a word list's finding stays what it is."""
    return "indirect" if stage == "context" and kind in _ON_INSTRUCTIONS else kind


class Detector(Protocol):
    """A local detector: pure Python, quick enough to run on every streamed window."""

    def check(self, text: str, stage: Stage) -> Verdict: ...


class Engine(Protocol):
    """Any engine, local or remote, as the runtime calls it."""

    async def acheck(self, text: str, stage: Stage) -> Verdict: ...
