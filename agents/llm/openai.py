"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, LiteLLM, gateways) through the SDK.

`OPENAI_BASE_URL` and `OPENAI_API_KEY` come from the Django settings or the environment.
Retries (429, 5xx, timeouts, lost connections) are the SDK's own, from `max_retries`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, cast

import httpx2
import openai

from agentbuilder.openai_profile import openai_profile
from agents.llm.base import (
    Finished,
    Message,
    ModelRequest,
    PartialToolCall,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionMessageParam,
        ChatCompletionToolParam,
    )

PREFIX = "openai/"
StopReason = Literal["end_turn", "tool_use", "max_tokens", "other"]
STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}

# An httpx client's pooled connections belong to the event loop that opened them, so
# clients are shared per loop (one per process under uvicorn), then per retry profile.
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[Any, ...], openai.AsyncOpenAI]
] = weakref.WeakKeyDictionary()


class OpenAIProvider:
    """Chat completions, streamed or not (`ModelRequest.stream`), for catalog ids
    `openai/<model>`."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        # The SDK builds the request, retries and raises status errors; the body is built
        # here in wire form and sent with the SDK's own `post` (its documented way to call
        # an endpoint with a body of one's own). `chat.completions.create` walked every
        # parameter as a typed dict to rename fields these never need and wrapped the
        # answer in objects read once: a call cost 11 % more CPU (3.21 against 2.84 ms,
        # medians, against tests/fakes' FakeOpenAI). The stream's chunks are read as
        # JSON, not as the SDK's per-chunk pydantic objects.
        translator = _Translator()
        try:
            response = await _client(request).post(
                "/chat/completions",
                cast_to=httpx2.Response,  # the SDK hands the response over unread
                body=_wire_body(request),
                stream=request.stream,
                options={"headers": {"traceparent": request.traceparent}}
                if request.traceparent
                else {},
            )
            if not request.stream:  # one `chat.completion`, read whole by the SDK
                for event in translator.feed(_as_chunk(response)):
                    yield event
            else:
                try:
                    async for chunk in _chunks(response.aiter_lines()):
                        for event in translator.feed(chunk):
                            yield event
                finally:
                    # Also when the consumer stops early: the connection goes back to the
                    # pool.
                    await response.aclose()
        except openai.OpenAIError as exc:
            raise _provider_error(exc) from exc
        except httpx2.TimeoutException as exc:  # the body stalled after the SDK handed it over
            raise _timeout() from exc
        except httpx2.HTTPError as exc:  # or broke off
            raise ProviderError(f"The OpenAI-compatible server's stream broke: {exc!r}") from exc
        for event in translator.finish():
            yield event


async def _chunks(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of a chat completions SSE body, as the SDK reads them: the `data`
    of each event without an `event` name, up to `[DONE]`; an `error` object is the
    server's failure mid-stream."""
    data: list[str] = []
    event: str | None = None
    async for line in lines:
        if line:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value
            continue
        text, named, data, event = "\n".join(data), event, [], None
        if not text or named is not None:
            continue
        if text.startswith("[DONE]"):
            # Read the body to its end (the last chunk of its chunked encoding) as the SDK
            # does: httpx puts a connection back in the pool only after a complete body,
            # and otherwise closes it, so every call opened a new one (a TLS handshake, on
            # a real server).
            async for _ in lines:
                pass
            return
        chunk = json.loads(text)
        if isinstance(chunk, dict) and chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise ProviderError(f"The OpenAI-compatible server failed: {message or error}")
        if isinstance(chunk, dict):
            yield chunk


def _as_chunk(response: httpx2.Response) -> dict[str, Any]:
    """A `chat.completion` as the one chunk that would have carried all of it: its message
    as the delta (each tool call at its index), its finish reason and its usage, so that
    one translator reads both forms."""
    try:
        completion = response.json()
    except ValueError:
        completion = None
    if not isinstance(completion, dict):
        raise ProviderError(f"The OpenAI-compatible server answered no object: {response.text}")
    choices = []
    for choice in (completion.get("choices") or ())[:1]:
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"content": message.get("content")}
        calls = message.get("tool_calls") or ()
        delta["tool_calls"] = [{**call, "index": index} for index, call in enumerate(calls)]
        choices.append({"delta": delta, "finish_reason": choice.get("finish_reason") or "stop"})
    return {"choices": choices, "usage": completion.get("usage")}


def _client(request: ModelRequest) -> openai.AsyncOpenAI:
    base_url, api_key = openai_profile()
    key = (base_url, api_key, request.max_retries, request.timeout)
    clients = _clients.setdefault(asyncio.get_running_loop(), {})
    if key not in clients:
        try:
            clients[key] = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=api_key,
                max_retries=request.max_retries,
                timeout=request.timeout,
            )
        except openai.OpenAIError as exc:
            raise ProviderError(f"OpenAI client not configured: {exc}") from exc
    return clients[key]


def _wire_body(request: ModelRequest) -> dict[str, Any]:
    """The chat completions request, streamed with usage or not streamed."""
    body: dict[str, Any] = {
        "model": request.model_id.removeprefix(PREFIX),
        "messages": _messages(request),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stream": request.stream,
    }
    if request.stream:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        if not request.parallel_tool_calls:
            body["parallel_tool_calls"] = False
    if request.force_tool:
        body["tool_choice"] = {"type": "function", "function": {"name": request.force_tool}}
    elif request.tools and request.tool_choice != "auto":
        body["tool_choice"] = request.tool_choice
    return body


def _messages(request: ModelRequest) -> list[ChatCompletionMessageParam]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message(m) for m in request.messages)
    return cast("list[ChatCompletionMessageParam]", messages)


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        # Chat completions has no error flag on a tool result: say it in the content.
        text = f"Error: {message.text}" if message.is_error else message.text
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.text or None,
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments or "{}"},
                }
                for call in message.tool_calls
            ],
        }
    if message.attachments:
        return {"role": message.role, "content": _parts(message)}
    return {"role": message.role, "content": message.text}


def _parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    for attachment in message.attachments:
        data = base64.b64encode(attachment.data).decode()
        url = f"data:{attachment.media_type};base64,{data}"
        # The catalog lets only images reach this provider (agents.runs.start checks it).
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _tool(spec: ToolSpec) -> ChatCompletionToolParam:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


class _Translator:
    """Chunks in, provider events out; tool-call fragments joined per `index`."""

    def __init__(self) -> None:
        self.calls: dict[int, PartialToolCall] = {}
        self.usage = Usage()
        self.stop_reason: StopReason = "end_turn"

    def feed(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        """One `chat.completion.chunk` object, as JSON."""
        usage = chunk.get("usage")
        if usage:
            # prompt_tokens includes the cached ones (prompt_tokens_details.cached_tokens).
            details = usage.get("prompt_tokens_details") or {}
            self.usage = Usage(
                usage.get("prompt_tokens", 0),
                usage.get("completion_tokens", 0),
                details.get("cached_tokens") or 0,
            )
        events: list[ProviderEvent] = []
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                events.append(TextChunk(delta["content"]))
            for fragment in delta.get("tool_calls") or ():
                call = self.calls.setdefault(fragment.get("index", 0), PartialToolCall())
                call.call_id = fragment.get("id") or call.call_id
                function = fragment.get("function")
                if function is not None:
                    call.name = function.get("name") or call.name
                    call.parts.append(function.get("arguments") or "")
            if choice.get("finish_reason"):
                self.stop_reason = STOP_REASONS.get(choice["finish_reason"], "other")
                events.extend(self._flush())
        return events

    def _flush(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = [
            ToolCallChunk(self.calls[i].part()) for i in sorted(self.calls)
        ]
        self.calls.clear()
        return events

    def finish(self) -> list[ProviderEvent]:
        return [*self._flush(), Finished(self.usage, self.stop_reason)]


REFUSED_REQUEST = (openai.BadRequestError, openai.UnprocessableEntityError)


def _timeout() -> ProviderError:
    return ProviderError("The OpenAI-compatible server did not answer in time", timeout=True)


def _provider_error(exc: openai.OpenAIError) -> ProviderError:
    if isinstance(exc, openai.APITimeoutError):
        return _timeout()
    if isinstance(exc, openai.APIStatusError):
        return ProviderError(
            f"The OpenAI-compatible server refused the call (HTTP {exc.status_code}): "
            f"{_error_message(exc)}",
            # A request refused as such another model would refuse too; throttling, a
            # server's failure, a model or key it does not know: another may answer.
            fallback_ok=not isinstance(exc, REFUSED_REQUEST),
        )
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(f"The OpenAI-compatible server could not be reached: {exc}")
    return ProviderError(f"The OpenAI-compatible server failed: {_error_message(exc)}")


def _error_message(exc: openai.OpenAIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return getattr(exc, "message", None) or str(exc)
