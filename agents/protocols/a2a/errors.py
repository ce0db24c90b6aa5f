"""How the A2A endpoint refuses: JSON-RPC error objects with A2A's codes, in an HTTP 200
body (JSON-RPC's transport rule), in the dialect of the method that was called.

The codes are the SDK's (`a2a.utils.errors`): -32700 parse error, -32600 invalid request,
-32601 method not found, -32602 invalid params, -32603 internal error, -32001 task not
found, -32002 task not cancelable, -32004 unsupported operation, -32009 version not
supported. A 1.0 error's `data` is the SDK's list of google.rpc details (an ErrorInfo whose
`metadata` carries ours, and a BadRequest naming each bad field); a 0.3 error's `data` is
ours as it is: `{"path": [...], "errors": [{"field", "path", "message"}]}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a2a.server.request_handlers.response_helpers import EXCEPTION_MAP, build_error_response
from a2a.utils.errors import (
    JSON_RPC_ERROR_CODE_MAP,
    A2AError,
    InternalError,
    InvalidParamsError,
)

from agentbuilder.errors import Invalid
from agents.protocols.a2a.dialects import Dialect

RequestId = str | int | None
Path = tuple[str | int, ...]


def field_name(path: Path) -> str:
    """`params.message.parts[0].data.text`: a path as the BadRequest's `field` names it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def invalid_params(problems: Sequence[tuple[Path, str]]) -> InvalidParamsError:
    """-32602 naming every bad field; `data.path` is the first one's."""
    errors = [
        {"field": field_name(path), "path": list(path), "message": message}
        for path, message in problems
    ]
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return InvalidParamsError(
        f"Invalid params: {summary}", data={"path": errors[0]["path"], "errors": errors}
    )


def from_invalid(exc: Invalid, locate: Any) -> InvalidParamsError:
    """The run's own refusal (a task input against its inputSchema), located in the A2A
    message by `locate` (a `("body", "inputs", ...)` loc → params path)."""
    error = invalid_params([(locate(item.loc), item.msg) for item in exc.errors])
    if exc.run_id is not None and error.data is not None:
        error.data["taskId"] = str(exc.run_id)  # the failed run that records the refusal
    return error


def error_body(request_id: RequestId, error: A2AError, dialect: Dialect) -> dict[str, Any]:
    """The JSON-RPC error response."""
    if dialect is Dialect.V1 and type(error) in EXCEPTION_MAP:  # the SDK's details
        return build_error_response(request_id, error)
    code = JSON_RPC_ERROR_CODE_MAP.get(type(error), JSON_RPC_ERROR_CODE_MAP[InternalError])
    body: dict[str, Any] = {"code": code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}
