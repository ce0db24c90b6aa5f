"""How chat completions refuses, as OpenAI does: its error object, the status its SDKs map
to their exceptions, and a failed run's status (the shared map)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agentbuilder.errors import ErrorItem, Invalid
from agents.protocols.failures import failure_status
from agents.runtime.events import ResponseFailed
from agents.runtime.failures import FailureCode

# The `type` and `code` of OpenAI's error object for each status we answer with.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    402: "insufficient_quota",  # a spent budget: OpenAI's type for a spent quota
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
ERROR_CODES = {
    401: "invalid_api_key",
    402: "budget_exceeded",
    403: "permission_denied",
    429: "rate_limit_exceeded",
}


class OpenAIErrorObject(BaseModel):
    message: str
    type: str = Field(description="`invalid_request_error`, `rate_limit_error`, ...")
    param: str | None = Field(description="The request field at fault, if one is.")
    code: str | None


class OpenAIError(BaseModel):
    """Every refusal of a chat completions route, as OpenAI's SDKs read it."""

    error: OpenAIErrorObject


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, before the stream and in it."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def failed_answer(failed: ResponseFailed) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) of a run that failed, answered whole."""
    headers = {}
    if failed.code not in (FailureCode.PROVIDER_ERROR, FailureCode.PROVIDER_TIMEOUT):
        headers["x-should-retry"] = "false"  # the SDKs would retry a 502 otherwise
    status = failure_status(failed.code)
    kind = ERROR_TYPES.get(status, "server_error")
    return status, error_body(failed.message, kind, failed.code), headers


def invalid_message(exc: Invalid) -> tuple[str, str | None, str | None]:
    """(message, param, code) of a validation refusal, OpenAI style."""
    items: list[ErrorItem] = exc.errors or [ErrorItem(("body",), "invalid request")]
    param = _param(items[0].loc)
    parts = [f"{_param(e.loc) or 'body'}: {e.msg}" for e in items]
    return "; ".join(parts), param, items[0].type


def _param(loc: tuple[str | int, ...]) -> str | None:
    path = loc[1:] if loc and loc[0] in ("body", "path", "query") else loc
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None
