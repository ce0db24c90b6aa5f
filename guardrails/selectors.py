from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from guardrails.models import Guardrail


def guardrail_list(*, environment_id: Any) -> QuerySet[Guardrail]:
    """The enabled guardrails usable in an environment: the global ones and its own."""
    return Guardrail.objects.filter(
        Q(environment__isnull=True) | Q(environment_id=environment_id), enabled=True
    ).order_by("name")


def unknown_guardrail_names(*, names: list[str], environment_id: Any) -> list[str]:
    """The names among `names` that no usable guardrail has, in their given order."""
    known = set(
        guardrail_list(environment_id=environment_id)
        .filter(name__in=names)
        .values_list("name", flat=True)
    )
    return [n for n in names if n not in known]
