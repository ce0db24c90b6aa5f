"""Embedders by name, imported lazily: a deployment without `openai` can still use Titan."""

from __future__ import annotations

import functools
from collections.abc import Callable

from agentbuilder.plugins import Registry
from retrieval.embedders.base import Embedder

EMBEDDERS: Registry[Callable[..., Embedder]] = Registry(
    "embedder",
    {
        "local": "retrieval.embedders.local.LocalEmbedder",
        "bedrock": "retrieval.embedders.bedrock.BedrockEmbedder",
        "openai": "retrieval.embedders.openai.OpenAIEmbedder",
    },
    packages={"bedrock": "boto3", "openai": "openai"},
    unknown="unknown embedding provider '{name}' (known: {known})",
)


@functools.cache
def embedder_for(
    name: str,
    *,
    dimension: int,
    model: str | None = None,
    batch_size: int = 64,
    max_retries: int = 3,
    timeout: float = 30.0,
) -> Embedder:
    """The shared embedder `name` with these options.

    Raises LookupError for an unknown name or a missing package, ValueError for options
    the provider does not support (Titan v2 takes dimensions 256, 512 and 1024 only).
    """
    return EMBEDDERS.lookup(name)(
        dimension=dimension,
        model=model,
        batch_size=batch_size,
        max_retries=max_retries,
        timeout=timeout,
    )
