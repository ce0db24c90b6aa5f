"""The two dialects of A2A's JSON-RPC binding that one endpoint answers, told apart by the
method's name: the current specification's (1.0: `SendMessage`, protobuf JSON, as the SDK's
client speaks by default) and 0.3's (`message/send`, `kind`-tagged objects, as
docs/api.md#a2a and most deployed clients name them)."""

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
    SUBSCRIBE = "subscribe"  # a live task's remaining updates (params: the task id)
    LIST = "list"  # 1.0 only: 0.3 has no tasks/list (its JSON Schema, the SDKs' 0.3 layers)
    # The push-notification config methods (agents.protocols.a2a.push).
    PUSH_SET = "push-set"
    PUSH_GET = "push-get"
    PUSH_LIST = "push-list"
    PUSH_DELETE = "push-delete"
    EXTENDED_CARD = "extended-card"


METHODS: dict[str, tuple[Dialect, Method]] = {
    "SendMessage": (Dialect.V1, Method.SEND),
    "SendStreamingMessage": (Dialect.V1, Method.STREAM),
    "GetTask": (Dialect.V1, Method.GET),
    "CancelTask": (Dialect.V1, Method.CANCEL),
    "SubscribeToTask": (Dialect.V1, Method.SUBSCRIBE),
    "ListTasks": (Dialect.V1, Method.LIST),
    "CreateTaskPushNotificationConfig": (Dialect.V1, Method.PUSH_SET),
    "GetTaskPushNotificationConfig": (Dialect.V1, Method.PUSH_GET),
    "ListTaskPushNotificationConfigs": (Dialect.V1, Method.PUSH_LIST),
    "DeleteTaskPushNotificationConfig": (Dialect.V1, Method.PUSH_DELETE),
    "GetExtendedAgentCard": (Dialect.V1, Method.EXTENDED_CARD),
    "message/send": (Dialect.V03, Method.SEND),
    "message/stream": (Dialect.V03, Method.STREAM),
    "tasks/get": (Dialect.V03, Method.GET),
    "tasks/cancel": (Dialect.V03, Method.CANCEL),
    "tasks/resubscribe": (Dialect.V03, Method.SUBSCRIBE),
    "tasks/pushNotificationConfig/set": (Dialect.V03, Method.PUSH_SET),
    "tasks/pushNotificationConfig/get": (Dialect.V03, Method.PUSH_GET),
    "tasks/pushNotificationConfig/list": (Dialect.V03, Method.PUSH_LIST),
    "tasks/pushNotificationConfig/delete": (Dialect.V03, Method.PUSH_DELETE),
    "agent/getAuthenticatedExtendedCard": (Dialect.V03, Method.EXTENDED_CARD),
}


PUSH_METHODS = frozenset({Method.PUSH_SET, Method.PUSH_GET, Method.PUSH_LIST, Method.PUSH_DELETE})


def dialect_of(method: str) -> Dialect:
    """The dialect an unknown method's refusal is written in: 0.3's names have a slash."""
    return Dialect.V03 if "/" in method else Dialect.V1


def card_dialect(version: str | None) -> Dialect:
    """The dialect a card is written in for a client that sent `A2A-Version: version`: 1.0's
    (protobuf JSON) for 1.x and later, 0.3's (JSON Schema) for 0.x or no header, as a 1.0
    server assumes 0.3 of a client that names no version (@a2a-js/sdk's server answers its
    cards so, `Vary: A2A-Version`)."""
    major = (version or "").strip().split(".")[0]
    return Dialect.V1 if major.isdigit() and int(major) >= 1 else Dialect.V03
