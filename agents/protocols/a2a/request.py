"""The A2A request: a JSON-RPC 2.0 envelope, its method (agents.protocols.a2a.dialects) and
params, read into the SDK's 1.0 types whichever dialect sent them; and what a message means
to each agent type:

- tool and RAG agents: the text of its text parts (a data part's JSON joins them) is the
  user's message;
- task agents: its first data part (a JSON object), or a text part holding a JSON object,
  is the inputs, validated against the agent's `inputSchema` when the run starts.

Every refusal is an A2A error (agents.protocols.a2a.errors) naming the params path at fault.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    VersionNotSupportedError,
)
from django.conf import settings
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ValidationError

from agentbuilder.api.parsers import MAX_DEPTH, check_json
from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.llm.base import Attachment, Message
from agents.protocols import attachments
from agents.protocols.a2a.dialects import METHODS, PUSH_METHODS, Dialect, Method, dialect_of
from agents.protocols.a2a.errors import Path, RequestId, invalid_params
from agents.protocols.native.request import ApprovalsBody
from agents.services.approvals import DecisionIn

MAX_HISTORY = 1000
PAGE_SIZE = 50  # ListTasks without pageSize, as the specification has it
MAX_PAGE_SIZE = 100  # the specification's bound


class RpcRefusal(Exception):
    """An error answered as a JSON-RPC error body, in `dialect`, for `request_id`."""

    def __init__(self, error: A2AError, request_id: RequestId, dialect: Dialect) -> None:
        super().__init__(error.message)
        self.error, self.request_id, self.dialect = error, request_id, dialect


@dataclass(frozen=True)
class Listing:
    """A ListTasks query, read: filters, and where its page starts."""

    context_id: str
    state: int  # a TaskState; TASK_STATE_UNSPECIFIED: any
    page_size: int
    after: Cursor | None  # the page starts after this task, newest first
    include_artifacts: bool
    status_after: datetime | None  # statusTimestampAfter


@dataclass(frozen=True)
class Cursor:
    """The last task of a page: where the next one starts. Runs are listed newest first by
    (started_at, id), which never changes once a run exists, so a page never repeats or
    skips a task that was there when the first page was read."""

    started_at: datetime
    run_id: uuid.UUID

    def token(self) -> str:
        raw = json.dumps([self.started_at.isoformat(), str(self.run_id)]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def of(token: str) -> Cursor:
        """Raises InvalidParams at params.pageToken for a token this server did not write."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            started_at, run_id = json.loads(raw)
            cursor = Cursor(datetime.fromisoformat(started_at), uuid.UUID(run_id))
            if cursor.started_at.tzinfo is None:  # ours carry their offset
                raise ValueError("naive")
            return cursor
        except (binascii.Error, ValueError, TypeError, AttributeError):
            raise invalid_params(
                [(("params", "pageToken"), "not a pageToken of this server's ListTasks")]
            ) from None


@dataclass(frozen=True)
class Call:
    """One JSON-RPC call, read."""

    request_id: RequestId
    dialect: Dialect
    method: Method
    message: pb.Message | None = None  # send, stream
    task_id: str = ""  # get, cancel
    history_length: int | None = None  # get, list
    listing: Listing | None = None  # list
    # send: answer at once with the working task, the run going on (the client polls it)
    returns_at_once: bool = False
    # A push-notification config: set's, or a send's own (agents.protocols.a2a.push), and
    # where its params put its URL; get's and delete's config id.
    push: pb.TaskPushNotificationConfig | None = None
    push_url_at: Path = ()
    push_id: str = ""

    def refusal(self, error: A2AError) -> RpcRefusal:
        return RpcRefusal(error, self.request_id, self.dialect)


def call_parse(raw: bytes, version: str | None = None) -> Call:
    """The call in `raw`, sent with the `A2A-Version` header `version`; raises RpcRefusal
    (-32700, -32600, -32601, -32602, -32009)."""
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:  # NaN and Infinity too
        raise RpcRefusal(JSONParseError(f"Parse error: {exc}"), None, Dialect.V1) from None
    except RecursionError:
        error: A2AError = InvalidRequestError(f"Invalid request: nested past {MAX_DEPTH} levels")
        raise RpcRefusal(error, None, Dialect.V1) from None
    if not isinstance(body, dict):
        what = "batch requests are not supported" if isinstance(body, list) else "not an object"
        raise RpcRefusal(InvalidRequestError(f"Invalid request: {what}"), None, Dialect.V1)
    request_id = body.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        raise RpcRefusal(
            InvalidRequestError("Invalid request: id must be a string, a number or null"),
            None,
            Dialect.V1,
        )
    method = body.get("method")
    dialect = dialect_of(method) if isinstance(method, str) else Dialect.V1
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str):
        problem = "'jsonrpc' must be '2.0' and 'method' a string"
        raise RpcRefusal(InvalidRequestError(f"Invalid request: {problem}"), request_id, dialect)
    if method not in METHODS:
        raise RpcRefusal(MethodNotFoundError(f"Method not found: {method}"), request_id, dialect)
    dialect, kind = METHODS[method]
    if version and not speaks(dialect, version):
        error = VersionNotSupportedError(
            f"A2A version '{version}' does not name the method {method}: it is A2A "
            f"{dialect.value}'s"
        )
        raise RpcRefusal(error, request_id, dialect)
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise RpcRefusal(
            invalid_params([(("params",), "params must be an object")]), request_id, dialect
        )
    try:
        # What the API's JSON parser refuses: nesting past its depth, text PostgreSQL
        # cannot store (a NUL, a lone surrogate), located.
        check_json(params, ("params",))
    except Invalid as exc:
        error = invalid_params([(item.loc, item.msg) for item in exc.errors])
        raise RpcRefusal(error, request_id, dialect) from None
    try:
        return _read(Call(request_id, dialect, kind), params)
    except A2AError as error:
        raise RpcRefusal(error, request_id, dialect) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def speaks(dialect: Dialect, version: str) -> bool:
    """Whether a client of A2A `version` (the header; patch releases aside) may call a
    method of `dialect`. Without the header, the method's name says which it speaks."""
    try:
        release = Version(version.strip())
    except InvalidVersion:
        return False
    if dialect is Dialect.V1:
        return release.major == 1
    return (release.major, release.minor) == (0, 3)


def _read(call: Call, params: dict[str, Any]) -> Call:
    sending = call.method in (Method.SEND, Method.STREAM)
    if call.method is Method.EXTENDED_CARD:
        return call  # answered whatever the params say
    if call.method in PUSH_METHODS:  # where webhooks are off, refused whatever the params
        return _push(call, params) if settings.WEBHOOKS_ENABLED else call
    if call.method is Method.LIST:  # 1.0 only (dialects)
        return _listing(call, _proto(params, pb.ListTasksRequest()), params)
    if call.dialect is Dialect.V1:
        if sending:
            send = _proto(params, pb.SendMessageRequest())
            if not send.HasField("message"):
                raise invalid_params([(("params", "message"), "a message is required")])
            at_once = send.configuration.return_immediately
            call = _with_message(call, send.message, at_once)
            if send.configuration.HasField("task_push_notification_config"):
                at = ("params", "configuration", "taskPushNotificationConfig", "url")
                return replace(
                    call, push=send.configuration.task_push_notification_config, push_url_at=at
                )
            return call
        query = _proto(
            params, pb.GetTaskRequest() if call.method is Method.GET else pb.CancelTaskRequest()
        )
        length = (
            query.history_length
            if isinstance(query, pb.GetTaskRequest) and query.HasField("history_length")
            else None
        )
        return _with_task(call, query.id, length)
    if sending:
        send = _pydantic(v03.MessageSendParams, params)
        at_once = send.configuration is not None and send.configuration.blocking is False
        call = _with_message(call, conversions.to_core_message(send.message), at_once)
        if send.configuration is not None and send.configuration.push_notification_config:
            push = conversions.to_core_push_notification_config(
                send.configuration.push_notification_config
            )
            at = ("params", "configuration", "pushNotificationConfig", "url")
            return replace(call, push=push, push_url_at=at)
        return call
    if call.method is Method.GET:
        task = _pydantic(v03.TaskQueryParams, params)
        return _with_task(call, task.id, task.history_length)
    return _with_task(call, _pydantic(v03.TaskIdParams, params).id, None)


def _push(call: Call, params: dict[str, Any]) -> Call:
    """A push-notification config method's params, read into 1.0's types."""
    push, push_id = None, ""
    at: Path = ()
    task_at: Path = ("params", "taskId") if call.dialect is Dialect.V1 else ("params", "id")
    if call.method is Method.PUSH_SET:
        if call.dialect is Dialect.V1:
            push = _proto(params, pb.TaskPushNotificationConfig())
            at = ("params", "url")
        else:
            compat = _pydantic(v03.TaskPushNotificationConfig, params)
            push = conversions.to_core_task_push_notification_config(compat)
            at, task_at = ("params", "pushNotificationConfig", "url"), ("params", "taskId")
        task_id = push.task_id
        if not push.url:
            raise invalid_params([(at, "a push notification config needs a url")])
    elif call.dialect is Dialect.V1:
        query = _proto(params, _V1_QUERIES[call.method]())
        task_id, push_id = query.task_id, getattr(query, "id", "")
    else:
        found = _pydantic(_V03_QUERIES[call.method], params)
        task_id, push_id = found.id, getattr(found, "push_notification_config_id", None) or ""
    if not task_id:
        raise invalid_params([(task_at, "the task id is required")])
    return replace(call, task_id=task_id, push=push, push_url_at=at, push_id=push_id)


_V1_QUERIES: dict[Method, Any] = {
    Method.PUSH_GET: pb.GetTaskPushNotificationConfigRequest,
    Method.PUSH_LIST: pb.ListTaskPushNotificationConfigsRequest,
    Method.PUSH_DELETE: pb.DeleteTaskPushNotificationConfigRequest,
}
_V03_QUERIES: dict[Method, type[BaseModel]] = {
    Method.PUSH_GET: v03.GetTaskPushNotificationConfigParams,
    Method.PUSH_LIST: v03.ListTaskPushNotificationConfigParams,
    Method.PUSH_DELETE: v03.DeleteTaskPushNotificationConfigParams,
}


def _listing(call: Call, query: pb.ListTasksRequest, params: dict[str, Any]) -> Call:
    if params.get("status") not in (None, 0, "TASK_STATE_UNSPECIFIED") and not query.status:
        # ParseDict drops an enum name it does not know: it would list every state.
        names = ", ".join(v.name for v in pb.TaskState.DESCRIPTOR.values if v.number)
        raise invalid_params([(("params", "status"), f"status is one of: {names}")])
    page_size = query.page_size if query.HasField("page_size") else PAGE_SIZE
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise invalid_params(
            [(("params", "pageSize"), f"pageSize is between 1 and {MAX_PAGE_SIZE}")]
        )
    length = query.history_length if query.HasField("history_length") else None
    if length is not None and not 0 <= length <= MAX_HISTORY:
        raise invalid_params(
            [(("params", "historyLength"), f"historyLength is between 0 and {MAX_HISTORY}")]
        )
    listing = Listing(
        context_id=query.context_id,
        state=query.status,
        page_size=page_size,
        after=Cursor.of(query.page_token) if query.page_token else None,
        include_artifacts=query.include_artifacts,
        status_after=(
            query.status_timestamp_after.ToDatetime(tzinfo=UTC)
            if query.HasField("status_timestamp_after")
            else None
        ),
    )
    return Call(call.request_id, call.dialect, call.method, history_length=length, listing=listing)


def _with_message(call: Call, message: pb.Message, at_once: bool) -> Call:
    if not message.message_id:  # 0.3's model requires it; 1.0's proto marks it REQUIRED
        raise invalid_params([(("params", "message", "messageId"), "a messageId is required")])
    if message.role != pb.ROLE_USER:
        raise invalid_params([(("params", "message", "role"), "the message's role must be user")])
    if not message.parts:
        raise invalid_params([(("params", "message", "parts"), "the message has no parts")])
    if len(message.context_id) > 100:
        raise invalid_params(
            [(("params", "message", "contextId"), "a contextId is at most 100 characters")]
        )
    at_once = at_once and call.method is Method.SEND  # a stream answers as it goes anyway
    return Call(
        call.request_id, call.dialect, call.method, message=message, returns_at_once=at_once
    )


def _with_task(call: Call, task_id: str, history_length: int | None) -> Call:
    if not task_id:
        raise invalid_params([(("params", "id"), "the task id is required")])
    if history_length is not None and not 0 <= history_length <= MAX_HISTORY:
        raise invalid_params(
            [(("params", "historyLength"), f"historyLength is between 0 and {MAX_HISTORY}")]
        )
    return Call(
        call.request_id, call.dialect, call.method, task_id=task_id, history_length=history_length
    )


def _proto(params: dict[str, Any], message: Any) -> Any:
    try:
        return ParseDict(params, message, ignore_unknown_fields=True)
    except ParseError as exc:
        raise invalid_params([(("params",), str(exc))]) from None


def _pydantic(model: type[BaseModel], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise invalid_params(
            [(("params", *_field_path(e["loc"])), e["msg"]) for e in exc.errors()]
        ) from None


def _field_path(loc: tuple[Any, ...]) -> Path:
    # A union's members (TextPart, DataPart ...) and a root model's `root` are pydantic's
    # bookkeeping, not the request's fields.
    return tuple(p for p in loc if not (isinstance(p, str) and (p == "root" or p[:1].isupper())))


# ---------------------------------------------------------------- the message, per agent type

PARTS = ("params", "message", "parts")


def chat_messages(message: pb.Message) -> tuple[Message, ...]:
    """A tool or RAG agent's user message: its text parts, data parts as JSON, and files
    given as bytes (1.0's `raw`, 0.3's FileWithBytes) of a media type a model may read
    (agents.protocols.attachments) as its attachments. A file of another type, or one
    named by URL (the server fetches none), is a part the agent cannot read: -32005."""
    texts: list[str] = []
    files: list[Attachment] = []
    for index, part in enumerate(message.parts):
        kind, at = part.WhichOneof("content"), (*PARTS, index)
        if kind == "text":
            texts.append(part.text)
        elif kind == "data":
            texts.append(json.dumps(part_data(part), ensure_ascii=False))
        elif kind == "raw" and (read_as := attachments.kind_of(part.media_type)) is not None:
            try:
                files.append(
                    attachments.from_bytes(
                        read_as, part.media_type, part.raw, at, name=part.filename
                    )
                )
            except Invalid as exc:
                raise invalid_params([(item.loc, item.msg) for item in exc.errors]) from None
        elif kind is None:
            raise invalid_params([(at, "a part holds text, data, raw bytes or a url")])
        else:
            raise unreadable(at, part)
    text = "\n".join(t for t in texts if t.strip())
    if not text:
        raise invalid_params([(PARTS, "send the question as a text part")])
    return (Message("user", text, attachments=tuple(files)),)


def unreadable(at: Path, part: pb.Part) -> ContentTypeNotSupportedError:
    media_type = part.media_type or "no media type"
    if part.WhichOneof("content") == "url":
        why = "the server fetches no URL: send the file's bytes"
    else:
        readable = sorted(t for types in attachments.MEDIA_TYPES.values() for t in types)
        why = f"this agent reads text and data parts, and files of {', '.join(readable)}"
    return ContentTypeNotSupportedError(
        f"Part {at[-1]} is a file ({media_type}): {why}",
        data={"path": list(at), "mediaType": part.media_type},
    )


def part_data(part: pb.Part) -> Any:
    """A data part's JSON. Protobuf keeps every number as a double: a whole one is an int
    again, as the client wrote it (`35`, not `35.0`, in a task's prompt)."""
    return whole_numbers(MessageToDict(part)["data"])


def whole_numbers(value: Any) -> Any:
    """`value` with every whole float an int (protobuf's Struct holds numbers as doubles)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


@dataclass(frozen=True)
class TaskInputs:
    inputs: dict[str, Any]
    part: int  # the index of the part they came from
    field: str  # "data", or "text" for JSON in a text part

    def locate(self, loc: tuple[str | int, ...]) -> Path:
        """A run refusal's `("body", "inputs", ...)` loc as the params path of this part."""
        rest = loc[2:] if loc[:2] == ("body", "inputs") else ()
        return (*PARTS, self.part, self.field, *rest)


def task_inputs(message: pb.Message) -> TaskInputs:
    """A task agent's inputs: the first data part, else a text part holding a JSON object."""
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") == "data":
            data = part_data(part)
            if not isinstance(data, dict):
                raise invalid_params(
                    [((*PARTS, index, "data"), "a task agent's inputs are a JSON object")]
                )
            return TaskInputs(data, index, "data")
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") == "text":
            try:
                data = json.loads(part.text)
            except ValueError:
                continue
            if isinstance(data, dict):
                return TaskInputs(data, index, "text")
    raise invalid_params(
        [(PARTS, "a task agent takes its inputs as a data part holding a JSON object")]
    )


def approval_decisions(message: pb.Message) -> list[DecisionIn]:
    """The decisions a message to a task that waits for approvals carries: its data part
    `{"decisions": [{"approvalRequestId", "decision", "message"?}]}`, the body of
    POST /v1/runs/{runId}/approvals (docs/api.md#a2a). Raises InvalidParamsError at the
    part, or at the field inside it."""
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") != "data":
            continue
        data = part_data(part)
        if not isinstance(data, dict) or "decisions" not in data:
            continue
        at = (*PARTS, index, "data")
        try:
            return parse(ApprovalsBody, data).decided()
        except Invalid as exc:
            raise invalid_params([((*at, *item.loc), item.msg) for item in exc.errors]) from None
    raise invalid_params(
        [
            (
                PARTS,
                "the task waits for approvals: send a data part "
                '{"decisions": [{"approvalRequestId", "decision": "approve" | "reject"}]}',
            )
        ]
    )
