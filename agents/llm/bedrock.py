"""Amazon Bedrock through boto3's ConverseStream, or Converse for a call that asks for one
answer (`ModelRequest.stream`).

boto3 blocks, so each call runs in its own worker thread, which reads the event stream and
hands the events to the event loop through a queue: a slow stream never holds up another.
Retries (throttling, 5xx, timeouts before the answer starts) are botocore's own, from the
client's retry config; what is left after them becomes a `ProviderError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import re
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import urllib3.exceptions
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EventStreamError,
    ParamValidationError,
    ReadTimeoutError,
)

from agentbuilder import aws
from agents.llm.base import (
    Attachment,
    Finished,
    Message,
    ModelRequest,
    PartialToolCall,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolCallPart,
    ToolSpec,
    Usage,
)

PREFIX = "bedrock/"
StopReason = Literal["end_turn", "tool_use", "max_tokens", "other"]
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
}
_DONE = object()


class BedrockProvider:
    """Models served by Bedrock's Converse API, for any model id of the catalog."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def put(item: Any) -> None:
            # The loop may be gone when a stream abandoned at shutdown finally ends.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(queue.put_nowait, item)

        reader = _Reader(converse_request(request), request, put)
        reader.start()
        translator = _Translator()
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise _provider_error(item) from item
                for event in translator.feed(item):
                    yield event
            for event in translator.finish():
                yield event
        finally:
            reader.stop()


def converse_request(request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `converse_stream` (or `converse`: the same) for `request`."""
    kwargs: dict[str, Any] = {
        "modelId": request.model_id.removeprefix(PREFIX),
        "messages": _messages(request.messages),
        "inferenceConfig": {"maxTokens": request.max_tokens, "temperature": request.temperature},
    }
    if request.system:
        kwargs["system"] = [{"text": request.system}]
    if request.tools:
        tool_config: dict[str, Any] = {"tools": [_tool(spec) for spec in request.tools]}
        if request.force_tool:
            tool_config["toolChoice"] = {"tool": {"name": request.force_tool}}
        elif request.tool_choice == "required":
            tool_config["toolChoice"] = {"any": {}}
        # Converse has no "none" and no parallel switch: the runtime drops the calls a
        # "none" answer makes anyway, and keeps the first call of a non-parallel one.
        kwargs["toolConfig"] = tool_config
    return kwargs


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "toolSpec": {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": {"json": spec.parameters},
        }
    }


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    # Converse wants strictly alternating roles: tool results travel in a user message, and
    # neighbours of one role (several results, a result and a user's text) share a message.
    merged: list[dict[str, Any]] = []
    for message in messages:
        role, content = _converse_message(message)
        if not content:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(content)
        else:
            merged.append({"role": role, "content": content})
    return merged


def _converse_message(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "toolUseId": message.tool_call_id or "",
            # Converse rejects a blank text block, and a tool may well return nothing.
            "content": [{"text": message.text or "(no output)"}],
        }
        if message.is_error:
            result["status"] = "error"
        return "user", [{"toolResult": result}]
    content: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
    content.extend(_attachment_block(a, n) for n, a in enumerate(message.attachments, 1))
    for call in message.tool_calls:
        tool_use = {"toolUseId": call.call_id, "name": call.name, "input": _input(call)}
        content.append({"toolUse": tool_use})
    return message.role, content


# Converse names formats by extension; these are the media types it reads.
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/html": "html",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}


def _attachment_block(attachment: Attachment, number: int) -> dict[str, Any]:
    if attachment.kind == "image":
        image = {"format": IMAGE_FORMATS[attachment.media_type]}
        return {"image": {**image, "source": {"bytes": attachment.data}}}
    return {
        "document": {
            "format": DOCUMENT_FORMATS[attachment.media_type],
            "name": _document_name(attachment.name, number),
            "source": {"bytes": attachment.data},
        }
    }


def _document_name(name: str, number: int) -> str:
    # Converse allows letters, digits, single spaces, hyphens, parentheses and brackets
    # in a document's name, and each name of a request once: the number keeps them apart.
    stem = name.rsplit(".", 1)[0] if "." in name else name
    clean = " ".join(re.sub(r"[^A-Za-z0-9\-()\[\] ]", " ", stem).split())[:80]
    return f"{clean} ({number})" if clean else f"document {number}"


def _input(call: ToolCallPart) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class _Translator:
    """ConverseStream events in, provider events out; tool input joined per content block."""

    def __init__(self) -> None:
        self.calls: dict[int, PartialToolCall] = {}
        self.usage = Usage()
        self.stop_reason: StopReason = "end_turn"

    def feed(self, event: dict[str, Any]) -> list[ProviderEvent]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool_use = start.get("start", {}).get("toolUse")
            if tool_use:
                index = start.get("contentBlockIndex", 0)
                self.calls[index] = PartialToolCall(tool_use["toolUseId"], tool_use["name"])
        elif "contentBlockDelta" in event:
            return self._delta(event["contentBlockDelta"])
        elif "contentBlockStop" in event:
            call = self.calls.pop(event["contentBlockStop"].get("contentBlockIndex", 0), None)
            if call is not None:
                return [ToolCallChunk(call.part())]
        elif "messageStop" in event:
            self.stop_reason = STOP_REASONS.get(event["messageStop"].get("stopReason"), "other")
        elif "metadata" in event:
            self.usage = _usage(event["metadata"].get("usage", {}))
        return []

    def _delta(self, block: dict[str, Any]) -> list[ProviderEvent]:
        delta = block.get("delta", {})
        if delta.get("text"):
            return [TextChunk(delta["text"])]
        call = self.calls.get(block.get("contentBlockIndex", 0))
        if "toolUse" in delta and call is not None:
            call.parts.append(delta["toolUse"].get("input", ""))
        return []

    def finish(self) -> list[ProviderEvent]:
        unclosed: list[ProviderEvent] = [ToolCallChunk(c.part()) for c in self.calls.values()]
        self.calls.clear()
        return [*unclosed, Finished(self.usage, self.stop_reason)]


def _usage(usage: dict[str, Any]) -> Usage:
    """Converse's `inputTokens` leaves out the tokens read from and written to the prompt
    cache; the normalised usage counts every token sent, and the cache reads apart."""
    read = usage.get("cacheReadInputTokens") or 0
    written = usage.get("cacheWriteInputTokens") or 0
    return Usage(usage.get("inputTokens", 0) + read + written, usage.get("outputTokens", 0), read)


_TRACEPARENT_HOOK = "agentbuilder-traceparent"
# The traceparent of the call a reader thread makes: botocore's hooks take no argument of
# the caller's, and each reader is a thread (so a context) of its own.
_traceparent: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "bedrock_traceparent", default=None
)


def _send_traceparent(request: Any, **_: Any) -> None:
    """Adds the call's `traceparent` after signing (the signature does not cover it, as
    for any header a proxy adds). Returns None: a value would stand in for the answer."""
    traceparent = _traceparent.get()
    if traceparent:
        request.headers["traceparent"] = traceparent


def stream_events(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """A Converse answer as the ConverseStream events that would have carried it (a text
    block as one delta, a tool use as its start, its whole input, its stop; then the stop
    reason and the usage), so that one translator reads both forms."""
    message = answer.get("output", {}).get("message", {})
    events: list[dict[str, Any]] = []
    for index, block in enumerate(message.get("content", ())):
        if "text" in block:
            delta = {"contentBlockIndex": index, "delta": {"text": block["text"]}}
            events.append({"contentBlockDelta": delta})
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            arguments = {"toolUse": {"input": json.dumps(use.get("input", {}))}}
            events.append({"contentBlockStart": {"contentBlockIndex": index, "start": start}})
            events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": arguments}})
            events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events.append({"messageStop": {"stopReason": answer.get("stopReason")}})
    events.append({"metadata": {"usage": answer.get("usage", {})}})
    return events


class _Reader(threading.Thread):
    """Calls ConverseStream and reads its events (or Converse, for a call that asks for
    one answer), in a thread of its own."""

    def __init__(
        self, kwargs: dict[str, Any], request: ModelRequest, put: Callable[[Any], None]
    ) -> None:
        super().__init__(name="bedrock-stream", daemon=True)
        self.kwargs = kwargs
        self.max_retries = request.max_retries
        self.timeout = request.timeout
        self.traceparent = request.traceparent
        self.stream = request.stream
        self.put = put
        self.lock = threading.Lock()
        self.stopped = False
        self.event_stream: Any = None

    def run(self) -> None:
        try:
            self._read()
        except Exception as exc:
            if not self.stopped:
                self.put(exc)
        finally:
            self.put(_DONE)

    def _read(self) -> None:
        client = aws.client("bedrock-runtime", max_retries=self.max_retries, timeout=self.timeout)
        # Registered once per shared client (the id makes a second registration a no-op);
        # the header comes from this thread's call.
        client.meta.events.register(
            "before-send.bedrock-runtime", _send_traceparent, unique_id=_TRACEPARENT_HOOK
        )
        _traceparent.set(self.traceparent)
        if not self.stream:  # one answer: read whole, put as the stream's events
            answer = client.converse(**self.kwargs)
            for event in stream_events(answer):
                if self.stopped:
                    return
                self.put(event)
            return
        event_stream = client.converse_stream(**self.kwargs)["stream"]
        with self.lock:
            if self.stopped:
                event_stream.close()
                return
            self.event_stream = event_stream
        finished = False
        try:
            for event in event_stream:
                if self.stopped:
                    break
                self.put(event)
            finished = True
        finally:
            with self.lock:
                self.event_stream = None
            if not finished or self.stopped:
                # Not read to its end: the connection cannot go back to the pool.
                event_stream.close()

    def stop(self) -> None:
        """Abandon the stream; a read blocked in this thread returns at once."""
        with self.lock:
            self.stopped = True
            event_stream = self.event_stream
        if event_stream is None:
            return
        try:
            # Wakes the blocked read; the reader then closes the connection itself.
            event_stream._raw_stream.shutdown()
        except Exception:
            event_stream.close()


# What Bedrock answers a request it refuses as such: another model would refuse it too
# (agents.llm.base.ProviderError.fallback_ok). Throttling, an unready or failing model, a
# model the account may not use: another may answer.
REFUSED_REQUEST = frozenset({"ValidationException", "validationException"})


def _provider_error(exc: BaseException) -> ProviderError:
    if isinstance(
        exc, ReadTimeoutError | ConnectTimeoutError | urllib3.exceptions.TimeoutError | TimeoutError
    ):
        return ProviderError(f"Bedrock did not answer in time: {exc}", timeout=True)
    if isinstance(exc, EventStreamError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "error")
        return ProviderError(
            f"Bedrock stream failed: {code}: {error.get('Message', '')}",
            fallback_ok=code not in REFUSED_REQUEST,
        )
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return ProviderError(
            f"Bedrock refused the call: {aws.client_error_text(exc)}",
            fallback_ok=code not in REFUSED_REQUEST,
        )
    if isinstance(exc, ParamValidationError):  # botocore's own check of the request
        return ProviderError(f"Bedrock refused the call: {exc}", fallback_ok=False)
    if isinstance(exc, BotoCoreError | urllib3.exceptions.HTTPError | OSError):
        return ProviderError(f"Bedrock connection failed: {exc}")
    return ProviderError(f"Bedrock call failed: {exc!r}")
