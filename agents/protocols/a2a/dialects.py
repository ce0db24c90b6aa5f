"""The two dialects of A2A's JSON-RPC binding that one endpoint answers, told apart by the
method's name: the current specification's (1.0: `SendMessage`, protobuf JSON, as the SDK's
client speaks by default) and 0.3's (`message/send`, `kind`-tagged objects, as SPEC
section 7 and most deployed clients name them)."""

from __future__ import annotations

from enum import Enum


class Dialect(Enum):
    V1 = "1.0"
    V03 = "0.3"


class Method(Enum):
    SEND = "send"
    STREAM = "stream"
    GET = "get"
    CANCEL = "cancel"


METHODS: dict[str, tuple[Dialect, Method]] = {
    "SendMessage": (Dialect.V1, Method.SEND),
    "SendStreamingMessage": (Dialect.V1, Method.STREAM),
    "GetTask": (Dialect.V1, Method.GET),
    "CancelTask": (Dialect.V1, Method.CANCEL),
    "message/send": (Dialect.V03, Method.SEND),
    "message/stream": (Dialect.V03, Method.STREAM),
    "tasks/get": (Dialect.V03, Method.GET),
    "tasks/cancel": (Dialect.V03, Method.CANCEL),
}


def dialect_of(method: str) -> Dialect:
    """The dialect an unknown method's refusal is written in: 0.3's names have a slash."""
    return Dialect.V03 if "/" in method else Dialect.V1
