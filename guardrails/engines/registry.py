"""Guardrail engines by name, imported lazily: a deployment without `boto3` can still run
the local detectors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from agentbuilder.plugins import Registry
from guardrails.engines.base import Engine


class EngineClass(Protocol):
    def from_config(self, config: Mapping[str, Any], *, fail_open: bool) -> Engine: ...


ENGINES: Registry[EngineClass] = Registry(
    "engine",
    {
        "local": "guardrails.engines.local.LocalEngine",
        "bedrock": "guardrails.engines.bedrock.BedrockGuardrailEngine",
    },
    packages={"bedrock": "boto3"},
    unknown="unknown guardrail engine '{name}'",
)


def engine_for(name: str, config: Mapping[str, Any], *, fail_open: bool) -> Engine:
    """The engine `name` built from a catalog row's `engine_config`; raises LookupError for
    an unknown engine or detector or a missing package, ValueError or KeyError for a config
    it does not take."""
    return ENGINES.lookup(name).from_config(config, fail_open=fail_open)
