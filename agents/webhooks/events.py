"""The events a webhook may subscribe to: one closed set, free of the ORM (request parsers
and the models both use it)."""

from __future__ import annotations

from enum import StrEnum


class WebhookEvent(StrEnum):
    """The run's ends and its waits for approvals fire today; the others are named for the
    features that will send them (budgets, experiments), so a subscription to them is
    accepted now."""

    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELED = "run.canceled"
    RUN_AWAITING_APPROVAL = "run.awaiting_approval"
    BUDGET_WARNING = "budget.warning"
    EXPERIMENT_COMPLETED = "experiment.completed"


# What a webhook that names no events receives.
RUN_END_EVENTS = (WebhookEvent.RUN_COMPLETED, WebhookEvent.RUN_FAILED, WebhookEvent.RUN_CANCELED)
