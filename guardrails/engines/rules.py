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


def build_engine(engine: str, config: dict[str, Any], *, fail_open: bool) -> Engine:
    """An engine for a catalog row; raises LookupError for an unknown engine or detector."""
    if engine == "local":
        from guardrails.detectors.registry import detector_for
        from guardrails.engines.local import LocalEngine

        return LocalEngine(detector_for(str(config.get("detector", "")), config))
    if engine == "bedrock":
        from guardrails.engines.bedrock import BedrockGuardrailEngine

        return BedrockGuardrailEngine(
            guardrail_id=str(config["guardrailId"]),
            version=str(config.get("version", "DRAFT")),
            max_retries=int(config.get("maxRetries", 3)),
            timeout=float(config.get("timeout", 10.0)),
            fail_open=fail_open,
        )
    raise LookupError(f"unknown guardrail engine '{engine}'")


def stages_of(config: dict[str, Any]) -> frozenset[Stage]:
    wanted = config.get("stages") or STAGES
    return frozenset(s for s in STAGES if s in wanted)
