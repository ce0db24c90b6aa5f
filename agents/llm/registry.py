"""Providers by name, imported lazily: a deployment without `openai` can still use Bedrock."""

from __future__ import annotations

import functools
from collections.abc import Callable

from agentbuilder.plugins import Registry
from agents.llm.base import Provider

PROVIDERS: Registry[Callable[[], Provider]] = Registry(
    "provider",
    {
        "local": "agents.llm.local.LocalModel",
        "bedrock": "agents.llm.bedrock.BedrockProvider",
        "openai": "agents.llm.openai.OpenAIProvider",
    },
    packages={"bedrock": "boto3", "openai": "openai"},
    unknown="unknown model provider '{name}'",
)


@functools.cache
def provider_for(name: str) -> Provider:
    """The shared provider instance for `name`; raises LookupError for an unknown name or a
    missing package."""
    return PROVIDERS.lookup(name)()
