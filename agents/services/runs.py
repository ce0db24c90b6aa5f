"""Writes on runs the caller may see: asking one to stop (docs/api.md#runs)."""

from __future__ import annotations

import uuid

from agentbuilder.errors import Conflict
from agentbuilder.users import User
from agents.models import RUN_ENDED, Environment, Run
from agents.runs.background import run_stop
from agents.selectors.runs import run_get


def run_cancel_request(*, user: User, environment: Environment, run_id: uuid.UUID) -> Run:
    """Ask a run the caller may see (its own, or any on an agent it AUDITs) to end
    `canceled`, wherever it runs: it does within 2 s. Raises NotFound for a run it may not
    see and Conflict for one that has ended. The run as it stands, the cancel asked."""
    run = run_get(user=user, environment=environment, run_id=run_id)
    if run.status not in RUN_ENDED:
        if run_stop(run_id=run.pk, by=user):
            run.refresh_from_db(fields=["status", "completed_at", "latency_ms", "error"])
            return run
        run.refresh_from_db(fields=["status"])  # it ended since it was read
    raise Conflict(f"Run '{run.pk}' has ended ({run.status}): it cannot be canceled.")
