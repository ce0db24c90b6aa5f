"""Writes of the model catalog: a model added (docs/api.md#catalogs), its prices
(docs/api.md#cost)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from agentbuilder.errors import Invalid, NotFound, PermissionDenied
from agentbuilder.users import User
from agents.audit.services import audit_record, created, diff, snapshot
from agents.models import AgentType, LLMModel, Provider

PRICES = ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok")
WIRE = {
    "input_usd_per_mtok": "inputPricePerMTok",
    "output_usd_per_mtok": "outputPricePerMTok",
    "cached_input_usd_per_mtok": "cachedInputPricePerMTok",
}


# What a model added by name is assumed to do: chat with tools, streamed, as the servers
# the catalog's OpenAI entry stands for do; images and documents only when said.
ADDED_CAPABILITIES = ("streaming", "tools", "structured_output")
AUDITED_FIELDS = ("name", "provider", "agent_types", "capabilities", "enabled")


@transaction.atomic
def model_add(
    *,
    user: User | None,
    model_id: str,
    name: str = "",
    capabilities: tuple[str, ...] = ADDED_CAPABILITIES,
) -> tuple[LLMModel, bool]:
    """Put `model_id` in the catalog, enabled, for every agent type: `openai/<name>` is
    served by OPENAI_BASE_URL, any other id by Bedrock. (model, whether it changed); a model
    there already is enabled, its other fields kept. `user` None: the operator (a command).
    Raises PermissionDenied, Invalid."""
    if user is not None and not user.has_perm("agents.add_llmmodel"):
        raise PermissionDenied("Adding to the catalog needs the catalog's permission.")
    model_id = model_id.strip()
    provider = Provider.OPENAI if model_id.startswith("openai/") else Provider.BEDROCK
    if (
        not model_id
        or model_id == "openai/"
        or len(model_id) > 200
        or any(c.isspace() for c in model_id)
    ):
        raise Invalid.at(("modelId",), "a model id: 1 to 200 characters, no spaces")
    model = LLMModel.objects.select_for_update().filter(pk=model_id).first()
    if model is not None:
        if model.enabled:
            return model, False
        before = snapshot(model, AUDITED_FIELDS)
        model.enabled = True
        model.save(update_fields=["enabled"])
        changes = diff(before, snapshot(model, AUDITED_FIELDS))
        audit_record(user=user, action="update", obj=model, environment=None, changes=changes)
        return model, True
    shown = model_id.removeprefix("openai/")
    model = LLMModel.objects.create(
        id=model_id,
        name=name or (f"{shown} (OpenAI-compatible)" if provider == Provider.OPENAI else shown),
        provider=provider,
        agent_types=list(AgentType.values),
        capabilities=list(capabilities),
    )
    audit_record(
        user=user,
        action="create",
        obj=model,
        environment=None,
        changes=created(snapshot(model, AUDITED_FIELDS)),
    )
    return model, True


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
