"""Links into the playground from elsewhere in the admin: a run's page opens the run there to
go on with its thread (docs/api.md#playground)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from agentbuilder.errors import NotFound
from agentbuilder.users import User
from agents.models import Run
from agents.selectors.agents import agent_get_invocable


def playground_run_url(*, user: User, run: Run) -> str | None:
    """The playground of the run's agent with the run (and its thread) opened, or None
    when the user may not invoke that agent (a deleted one included): no link that 404s."""
    try:
        agent_get_invocable(user=user, agent_id=run.agent_id)
    except NotFound:
        return None
    page = reverse("admin:agents_agent_playground", args=[run.agent_id])
    return f"{page}?{urlencode({'run': str(run.pk)})}"
