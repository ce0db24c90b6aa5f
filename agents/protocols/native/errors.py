"""How the native routes answer a run that failed: the body of docs/api.md#errors."""

from __future__ import annotations

from typing import Any

from agents.protocols.failures import failure_status
from agents.runtime.events import ResponseFailed

__all__ = ["error_body", "failure_status"]


def error_body(failed: ResponseFailed) -> dict[str, Any]:
    return {"detail": f"{failed.code}: {failed.message}"}
