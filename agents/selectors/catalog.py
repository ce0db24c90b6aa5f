"""Reads of the model catalog."""

from __future__ import annotations

from django.db.models import QuerySet

from agents.models import LLMModel


def model_list(*, agent_type: str | None = None) -> QuerySet[LLMModel]:
    models = LLMModel.objects.filter(enabled=True)
    if agent_type:
        models = models.filter(agent_types__contains=[agent_type])
    return models.order_by("provider", "id")
