"""Catalog rows turned into what the runtime applies: name, engine, stages, messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardrails.engines.base import Engine, Stage

STAGES: tuple[Stage, ...] = ("input", "output")  # where a row applies unless it names stages
ALL_STAGES: tuple[Stage, ...] = ("input", "output", "context")


@dataclass(frozen=True)
class Rule:
    name: str
    engine: Engine
    stages: frozenset[Stage]
    blocked_input: str
    blocked_output: str

    def message(self, stage: Stage) -> str:
        return self.blocked_output if stage == "output" else self.blocked_input


def stages_of(config: dict[str, Any]) -> frozenset[Stage]:
    wanted = config.get("stages") or STAGES
    return frozenset(s for s in ALL_STAGES if s in wanted)
