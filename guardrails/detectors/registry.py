"""Local detectors by name, imported lazily: a catalog row's `engine_config` names one."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from guardrails.engines.base import Detector

DETECTORS: dict[str, str] = {
    "profanity": "guardrails.detectors.profanity.ProfanityDetector",
    "insults": "guardrails.detectors.insults.InsultsDetector",
    "hate": "guardrails.detectors.hate.HateDetector",
    "prompt_attack": "guardrails.detectors.prompt_attack.PromptAttackDetector",
    "prompt_attack_classifier": "guardrails.detectors.classifier.ClassifierDetector",
}
# The classifier's features and first head ship in this wheel (pure Python, no download).
PACKAGES: dict[str, str] = {"prompt_attack_classifier": "securevector-guardian-model"}


def detector_for(name: str, config: Mapping[str, Any]) -> Detector:
    """The detector `name` built from `config` (its `detector`, `stages` keys aside); raises
    LookupError for an unknown name or a missing package and ValueError for a config it does
    not take."""
    try:
        path = DETECTORS[name]
    except KeyError:
        raise LookupError(f"unknown guardrail detector '{name}'") from None
    module, _, attribute = path.rpartition(".")
    try:
        detector_class = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        package = PACKAGES.get(name, name)
        raise LookupError(f"the {name} detector needs the '{package}' package: {exc}") from exc
    # `detector` names it and `stages` is for the runtime: the rest are the detector's own.
    options = {key: value for key, value in config.items() if key not in ("detector", "stages")}
    try:
        detector: Detector = detector_class(**options)
    except TypeError as exc:
        raise ValueError(f"bad configuration for the {name} detector: {exc}") from None
    return detector
