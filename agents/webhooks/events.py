"""The events a webhook may subscribe to: one closed set, free of the ORM (request parsers
and the models both use it)."""

from __future__ import annotations

from enum import StrEnum


class WebhookEvent(StrEnum):
    """A run's ends and its waits for approvals, a budget's warnings at 80 % and 100 %
    (agents.budgets.warnings), an experiment's end."""

    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELED = "run.canceled"
    RUN_AWAITING_APPROVAL = "run.awaiting_approval"
    BUDGET_WARNING = "budget.warning"
    EXPERIMENT_COMPLETED = "experiment.completed"


# What a webhook that names no events receives.
RUN_END_EVENTS = (WebhookEvent.RUN_COMPLETED, WebhookEvent.RUN_FAILED, WebhookEvent.RUN_CANCELED)
