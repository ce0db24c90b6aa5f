"""How the process protocol refuses: a response with `status: failed` and `error {code,
message}`, under the status code of docs/api.md#errors (a failed run's: the shared map)."""

from __future__ import annotations

from typing import Any

from agents.protocols.failures import failure_status
from agents.protocols.process.models import AgentResponse, Error, RunStatus, dump, epoch_now

__all__ = ["ERROR_CODES", "error_message", "error_response", "failure_status"]

# The protocol's error codes for the refusals of docs/api.md#errors.
ERROR_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    402: "budget_exceeded",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def error_response(code: str, message: str, session_id: str | None = None) -> dict[str, Any]:
    """A response that failed before it could run: the document's error style."""
    now = epoch_now()
    response = AgentResponse(
        status=RunStatus.Failed,
        created_at=now,
        completed_at=now,
        error=Error(code=code, message=message),
        session_id=session_id,
    )
    return dump(response)


def error_message(detail: Any) -> str:
    """An error body's `detail` (docs/api.md#errors) (a string, or located items) as one message."""
    if isinstance(detail, list):
        items = []
        for item in detail:
            if not isinstance(item, dict):
                items.append(str(item))
                continue
            loc = [str(p) for p in item.get("loc", [])]
            path = ".".join(loc[1:] if loc[:1] == ["body"] else loc)
            items.append(f"{path}: {item.get('msg')}" if path else str(item.get("msg")))
        return "; ".join(items)
    return str(detail)
