"""Writes of the model catalog: its prices (docs/api.md#cost)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone

from agentbuilder.errors import Invalid, NotFound, PermissionDenied
from agentbuilder.users import User
from agents.models import LLMModel

PRICES = ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok")
WIRE = {
    "input_usd_per_mtok": "inputPricePerMTok",
    "output_usd_per_mtok": "outputPricePerMTok",
    "cached_input_usd_per_mtok": "cachedInputPricePerMTok",
}


def model_prices_update(*, user: User, model_id: str, changes: dict[str, Any]) -> LLMModel:
    """Set the prices `changes` names (a field set to None clears it); the date they were
    taken is the one given, or today. The catalog is the platform's, not an environment's:
    only those who may change catalog models (the admin's permission) may."""
    model = LLMModel.objects.filter(pk=model_id).first()
    if model is None:
        raise NotFound(f"Model '{model_id}' not found.")
    if not user.has_perm("agents.change_llmmodel"):
        raise PermissionDenied("Changing the catalog's prices needs the catalog's permission.")
    for field in PRICES:
        if field in changes:
            value = changes[field]
            setattr(model, field, None if value is None else Decimal(str(value)))
    if (model.input_usd_per_mtok is None) != (model.output_usd_per_mtok is None):
        missing = "input" if model.input_usd_per_mtok is None else "output"
        raise Invalid.at(
            ("body", WIRE[f"{missing}_usd_per_mtok"]), "give both the input and the output price"
        )
    model.prices_as_of = changes.get("prices_as_of") or timezone.now().date()
    model.save(update_fields=[*PRICES, "prices_as_of"])
    return model
