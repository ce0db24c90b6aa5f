"""Local detectors by name, imported lazily: a catalog row's `engine_config` names one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentbuilder.plugins import Registry
from guardrails.engines.base import Detector

DETECTORS: Registry[Callable[..., Detector]] = Registry(
    "detector",
    {
        "profanity": "guardrails.detectors.profanity.ProfanityDetector",
        "insults": "guardrails.detectors.insults.InsultsDetector",
        "hate": "guardrails.detectors.hate.HateDetector",
        "prompt_attack": "guardrails.detectors.prompt_attack.PromptAttackDetector",
        "prompt_attack_classifier": "guardrails.detectors.classifier.ClassifierDetector",
    },
    # The classifier's features and first head ship in this wheel (pure Python, no download).
    packages={"prompt_attack_classifier": "securevector-guardian-model"},
    unknown="unknown guardrail detector '{name}'",
)


def detector_for(name: str, config: Mapping[str, Any]) -> Detector:
    """The detector `name` built from `config` (its `detector`, `stages` keys aside); raises
    LookupError for an unknown name or a missing package and ValueError for a config it does
    not take."""
    detector_class = DETECTORS.lookup(name)
    # `detector` names it and `stages` is for the runtime: the rest are the detector's own.
    options = {key: value for key, value in config.items() if key not in ("detector", "stages")}
    try:
        return detector_class(**options)
    except TypeError as exc:
        raise ValueError(f"bad configuration for the {name} detector: {exc}") from None
