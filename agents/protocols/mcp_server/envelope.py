"""What a request to /v1/mcp must hold before the SDK reads it.

Two rules, checked on the parsed body:

- **Echoed fields are small.** The server writes a request's `id` into its answer and its
  `params._meta.progressToken` into every progress notification, one a text delta: a
  100 KB token came back 201 times (20.8 MB for a 103 KB request). The specification
  types both as a string or an integer and bounds neither; here a string is at most
  ECHOED_MAX_CHARS characters and an integer within JSON's safe range (what a
  JavaScript client can hold). A token past that is -32602; an id past it is -32600,
  answered with `id: null` since that id cannot be echoed.
- **Params are text PostgreSQL can store**, as the REST API's parser and the A2A endpoint
  hold their bodies (agentbuilder.api.parsers.check_json): a NUL or a lone surrogate in a
  tool's name, a `threadId` or any argument is -32602 naming the field, not a database
  error; nesting past the parser's depth too.

Anything else about the body (not JSON, a batch, a malformed envelope) is the SDK's to
refuse, as it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from agentbuilder.api.parsers import check_json
from agentbuilder.errors import Invalid, Loc

ECHOED_MAX_CHARS = 200
SAFE_INTEGER = 2**53 - 1
# A field path names the client's own keys: each is cut to this in an error message.
KEY_MAX_CHARS = 64


@dataclass(frozen=True)
class Refusal:
    """A JSON-RPC error for a request the SDK must not see."""

    id: str | int | None
    code: int
    message: str

    def body(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


def echo_problem(value: Any) -> str | None:
    """Why `value` may not be echoed (an id or a progress token), or None."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return "must be a string or an integer"
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        return f"must be an integer between -{SAFE_INTEGER} and {SAFE_INTEGER}"
    if isinstance(value, str) and len(value) > ECHOED_MAX_CHARS:
        return f"must be at most {ECHOED_MAX_CHARS} characters"
    return None


def refusal(body: Any) -> Refusal | None:
    """The error `body` (a parsed JSON-RPC message, or a batch of them) is answered with,
    or None to hand it to the SDK."""
    for message in body if isinstance(body, list) else [body]:
        found = _message_refusal(message)
        if found is not None:
            return found
    return None


def _message_refusal(message: Any) -> Refusal | None:
    if not isinstance(message, dict):
        return None
    request_id = message.get("id")
    if request_id is not None:
        problem = echo_problem(request_id)
        if problem is not None:
            return Refusal(None, INVALID_REQUEST, f"Invalid request: id {problem}.")
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and "progressToken" in meta:
        problem = echo_problem(meta["progressToken"])
        if problem is not None:
            return Refusal(
                request_id, INVALID_PARAMS, f"Invalid params: params._meta.progressToken {problem}."
            )
    try:
        check_json(params, ("params",))
    except Invalid as exc:
        problems = "; ".join(f"{field_name(item.loc)}: {item.msg}" for item in exc.errors)
        return Refusal(request_id, INVALID_PARAMS, f"Invalid params: {problems}.")
    return None


def field_name(loc: Loc) -> str:
    """`params.arguments.threadId`; a key of the client's is cut, so the path stays small."""
    parts = [str(part) for part in loc]
    return ".".join(p if len(p) <= KEY_MAX_CHARS else p[:KEY_MAX_CHARS] + "…" for p in parts)
