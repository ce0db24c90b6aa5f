from __future__ import annotations

from typing import Any

from django.db.models import F, Q, QuerySet

from guardrails.engines.registry import engine_for
from guardrails.engines.rules import Rule, stages_of
from guardrails.models import Guardrail


def guardrail_list(*, environment_id: Any) -> QuerySet[Guardrail]:
    """The enabled guardrails usable in an environment, one per name: its own row where it
    has one, else the global row."""
    return (
        Guardrail.objects.filter(
            Q(environment__isnull=True) | Q(environment_id=environment_id), enabled=True
        )
        .order_by("name", F("environment_id").asc(nulls_last=True))
        .distinct("name")
    )


def unknown_guardrail_names(*, names: list[str], environment_id: Any) -> list[str]:
    """The names among `names` that no usable guardrail has, in their given order."""
    if not names:  # most calls: building the query would cost more than the answer
        return []
    known = set(
        guardrail_list(environment_id=environment_id)
        .filter(name__in=names)
        .values_list("name", flat=True)
    )
    return [n for n in names if n not in known]


def guardrail_rules(*, names: list[str], environment_id: Any) -> list[Rule]:
    """The rules behind `names`, in the given order, from one query; raises LookupError
    naming the first that is unknown or disabled."""
    if not names:
        return []
    rows = {g.name: g for g in guardrail_list(environment_id=environment_id).filter(name__in=names)}
    rules = []
    for name in dict.fromkeys(names):
        row = rows.get(name)
        if row is None:
            raise LookupError(name)
        engine = engine_for(row.engine, row.engine_config, fail_open=row.fail_open)
        rules.append(
            Rule(
                name=row.name,
                engine=engine,
                stages=stages_of(row.engine_config),
                blocked_input=row.blocked_input_message,
                blocked_output=row.blocked_output_message,
            )
        )
    return rules
