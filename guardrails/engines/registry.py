"""Guardrail engines by name, imported lazily: a deployment without `boto3` can still run
the local detectors."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from guardrails.engines.base import Engine

ENGINES = {
    "local": "guardrails.engines.local.LocalEngine",
    "bedrock": "guardrails.engines.bedrock.BedrockGuardrailEngine",
}
PACKAGES = {"bedrock": "boto3"}


def engine_for(name: str, config: Mapping[str, Any], *, fail_open: bool) -> Engine:
    """The engine `name` built from a catalog row's `engine_config`; raises LookupError for
    an unknown engine or detector or a missing package, ValueError or KeyError for a config
    it does not take."""
    try:
        path = ENGINES[name]
    except KeyError:
        raise LookupError(f"unknown guardrail engine '{name}'") from None
    module, _, attribute = path.rpartition(".")
    try:
        engine_class = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        package = PACKAGES.get(name, name)
        raise LookupError(f"the {name} engine needs the '{package}' package: {exc}") from exc
    engine: Engine = engine_class.from_config(config, fail_open=fail_open)
    return engine
