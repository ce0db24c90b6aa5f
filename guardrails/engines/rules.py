"""Catalog rows turned into what the runtime applies: name, engine, stages, messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardrails.engines.base import Engine, Stage

STAGES: tuple[Stage, ...] = ("input", "output")


@dataclass(frozen=True)
class Rule:
    name: str
    engine: Engine
    stages: frozenset[Stage]
    blocked_input: str
    blocked_output: str

    def message(self, stage: Stage) -> str:
        return self.blocked_input if stage == "input" else self.blocked_output


def stages_of(config: dict[str, Any]) -> frozenset[Stage]:
    wanted = config.get("stages") or STAGES
    return frozenset(s for s in STAGES if s in wanted)
