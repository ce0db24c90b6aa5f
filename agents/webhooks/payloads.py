"""What a delivery's body says, by its format: Standard Webhooks' `{"type", "timestamp",
"data"}` for webhooks, the A2A task for push notifications (agents.protocols.a2a.push).
Built from the run's row at the first attempt and kept, so every retry sends the same bytes'
worth of content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone

from agentbuilder.plugins import Registry
from agents.models import ApprovalStatus, DeliveryFormat, Run
from agents.webhooks.events import WebhookEvent

Payload = Callable[[Run, str], dict[str, Any]]

PAYLOADS: Registry[Payload] = Registry(
    "webhook payload",
    {
        DeliveryFormat.STANDARD: "agents.webhooks.payloads.standard_payload",
        DeliveryFormat.A2A_V1: "agents.protocols.a2a.push.push_payload_v1",
        DeliveryFormat.A2A_V03: "agents.protocols.a2a.push.push_payload_v03",
    },
)


def standard_payload(run: Run, event: str) -> dict[str, Any]:
    """The event and the run as GET /v1/runs/{id} shows it, without its messages and steps
    (docs/api.md#webhooks); `run.awaiting_approval` adds the requests that wait."""
    at = run.completed_at or timezone.now()
    payload: dict[str, Any] = {
        "type": event,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
        "data": {
            "id": str(run.pk),
            "agentId": str(run.agent_id),
            "versionId": str(run.version_id),
            "callerId": run.caller_id,
            "protocol": run.protocol,
            "status": run.status,
            "startedAt": run.started_at.isoformat().replace("+00:00", "Z"),
            "completedAt": run.completed_at.isoformat().replace("+00:00", "Z")
            if run.completed_at
            else None,
            "latencyMs": run.latency_ms,
            "tokensUsage": run.tokens_usage,
            "threadId": run.thread_id or None,
            "output": run.output,
            "error": run.error,
        },
    }
    if event == WebhookEvent.RUN_AWAITING_APPROVAL:  # what waits, for whoever decides it
        asked = run.approval_requests.filter(status=ApprovalStatus.PENDING).order_by("created_at")
        payload["data"]["approvalRequests"] = [
            {"approvalRequestId": str(a.pk), "tool": a.tool, "arguments": a.arguments}
            for a in asked
        ]
    return payload
