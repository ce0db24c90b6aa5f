"""Embedders by name, imported lazily: a deployment without `openai` can still use Titan."""

from __future__ import annotations

import functools
import importlib

from retrieval.embedders.base import Embedder

EMBEDDERS = {
    "local": "retrieval.embedders.local.LocalEmbedder",
    "bedrock": "retrieval.embedders.bedrock.BedrockEmbedder",
    "openai": "retrieval.embedders.openai.OpenAIEmbedder",
}
PACKAGES = {"bedrock": "boto3", "openai": "openai"}


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
    try:
        path = EMBEDDERS[name]
    except KeyError:
        known = ", ".join(EMBEDDERS)
        raise LookupError(f"unknown embedding provider '{name}' (known: {known})") from None
    module, _, attribute = path.rpartition(".")
    try:
        embedder_class = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        package = PACKAGES.get(name, name)
        raise LookupError(f"the {name} embedder needs the '{package}' package: {exc}") from exc
    embedder: Embedder = embedder_class(
        dimension=dimension,
        model=model,
        batch_size=batch_size,
        max_retries=max_retries,
        timeout=timeout,
    )
    return embedder
