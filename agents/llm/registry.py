"""Providers by name, imported lazily: a deployment without `openai` can still use Bedrock."""

from __future__ import annotations

import functools
import importlib

from agents.llm.base import Provider

PROVIDERS = {
    "local": "agents.llm.local.LocalModel",
    "bedrock": "agents.llm.bedrock.BedrockProvider",
    "openai": "agents.llm.openai.OpenAIProvider",
}
PACKAGES = {"bedrock": "boto3", "openai": "openai"}


@functools.cache
def provider_for(name: str) -> Provider:
    """The shared provider instance for `name`; raises LookupError for an unknown name."""
    try:
        path = PROVIDERS[name]
    except KeyError:
        raise LookupError(f"unknown model provider '{name}'") from None
    module, _, attribute = path.rpartition(".")
    try:
        provider_class = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        package = PACKAGES.get(name, name)
        raise LookupError(f"the {name} provider needs the '{package}' package: {exc}") from exc
    provider: Provider = provider_class()
    return provider
