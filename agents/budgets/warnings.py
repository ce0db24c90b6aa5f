"""`budget.warning`: when a charge takes a budget's period past 80 % or 100 % of a limit, the
one process whose statement claims that warning sends it, as a webhook delivery to each
enabled webhook in the budget's reach that subscribes to it (the agent's for an agent
budget, every agent's of the environment otherwise), its payload fixed now, and in the log.
The admin shows budgets at 80 % and more on its budget page (agents.budgets.admin)."""

from __future__ import annotations

import functools
import logging
from datetime import UTC, date, datetime

from django.db import connection

from agents.budgets.limits import BudgetLimits, Spent
from agents.models import AgentWebhook, BudgetScope, BudgetSpend, DeliveryFormat, WebhookDelivery
from agents.webhooks import dispatch
from agents.webhooks.events import WebhookEvent

logger = logging.getLogger(__name__)


def budget_warning_send(
    *, limits: BudgetLimits, spend_id: int, start: date, spent: Spent, threshold: int
) -> bool:
    """Claim the warning at `threshold` % of this period and send it; False when another
    charge claimed it first (it sends it)."""
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(threshold), {"id": spend_id})
        if cursor.fetchone() is None:
            return False
    logger.warning("budget %s at %s%%: %s", limits.id, threshold, limits.as_json(spent, start))
    event = WebhookEvent.BUDGET_WARNING.value
    now = datetime.now(UTC)
    payload = {
        "type": event,
        "timestamp": now.isoformat().replace("+00:00", "Z"),
        "data": {"threshold": threshold, "budget": limits.as_json(spent, start)},
    }
    hooks = AgentWebhook.objects.filter(
        agent__environment_id=limits.environment_id,
        agent__deleted_at__isnull=True,
        enabled=True,
        events__contains=[event],
    )
    if limits.scope == BudgetScope.AGENT and limits.target is not None:
        hooks = hooks.filter(agent_id=limits.target)
    made = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                key=f"budget:{limits.id}:{start.isoformat()}:{threshold}:agent:{hook.pk}",
                environment_id=limits.environment_id,
                agent_webhook=hook,
                event=event,
                format=DeliveryFormat.STANDARD,
                url=hook.url,
                payload=payload,
                next_attempt_at=now,
            )
            for hook in hooks
        ],
        ignore_conflicts=True,  # once per period and threshold, whatever happens
    )
    if made:
        dispatch.wake()
    return True


@functools.cache
def _claim_sql(threshold: int) -> str:
    table = connection.ops.quote_name(BudgetSpend._meta.db_table)
    column = {80: "warned_80_at", 100: "warned_100_at"}[threshold]
    # Names from the model and a fixed column; the id is a parameter.
    return f"""
        UPDATE {table} SET {column} = statement_timestamp()
        WHERE id = %(id)s AND {column} IS NULL
        RETURNING id
    """  # noqa: S608
