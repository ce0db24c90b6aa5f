"""Providers by name, imported lazily: a deployment without `openai` can still use Bedrock."""

from __future__ import annotations

import functools

from django.utils.module_loading import import_string

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
    try:
        provider_class = import_string(path)
    except ImportError as exc:
        package = PACKAGES.get(name, name)
        raise LookupError(f"the {name} provider needs the '{package}' package: {exc}") from exc
    return provider_class()
