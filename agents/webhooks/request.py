"""A request body's `webhook` (native invoke routes, `respond`, `process`), as the protocols
parse it: free of the ORM; `agents.webhooks.guard` checks its URL before the run opens."""

from __future__ import annotations

from pydantic import Field

from agentbuilder.wire import CamelModel
from agents.webhooks.events import RUN_END_EVENTS, WebhookEvent


class WebhookBody(CamelModel):
    """Where this run's events go: `url` receives each event of `events` (the run's ends
    when absent) as a Standard Webhook signed with the environment's secret."""

    url: str = Field(
        min_length=1, max_length=2000, description="http(s); passes the address guard."
    )
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list(RUN_END_EVENTS), min_length=1, max_length=len(WebhookEvent)
    )

    def stored(self) -> dict[str, object]:
        """As the run's row keeps it (`Run.webhook`), for the trigger that makes deliveries."""
        return {"url": self.url, "events": sorted({str(e) for e in self.events})}
