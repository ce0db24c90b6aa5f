"""A fake OpenAI-compatible server that the real `openai` SDK talks to over HTTP.

`POST /v1/chat/completions` answers server-sent events (`data: {chunk}` … `data: [DONE]`)
when `stream` is true, a `chat.completion` object otherwise. `POST /v1/embeddings` answers a
`Turn` with an embeddings list, each vector derived from its input text (`openai_embedding`),
in floats or base64 as `encoding_format` asks, in reverse order of `index` when
`fake.reverse_embeddings` is set. Errors carry OpenAI's body
`{"error": {"message", "type", "code"}}`.

    with FakeOpenAI() as fake:
        fake.script(Fail(429, retry_after_ms=10), Turn(calls=[Call("add", {"a": 1})]))
        fake.script(Turn())  # one embeddings request, answered from its input
        fake.fail_model("gpt-4o-mini", Fail(429))  # its every call, retries too
        # point the SDK at f"{fake.url}/v1" (OPENAI_BASE_URL)
"""

from __future__ import annotations

import array
import base64
import hashlib
import json
import math
import random
import sys
import time
from typing import Any

from tests.fakes.server import Fail, FakeHandler, FakeServer, Recorded, Turn

ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}
# The size of a model's vectors when the request does not say.
EMBEDDING_SIZES = {"text-embedding-3-large": 3072, "text-embedding-3-small": 1536}
DEFAULT_EMBEDDING_SIZE = 1536


def openai_embedding(text: str, dimension: int = DEFAULT_EMBEDDING_SIZE) -> list[float]:
    """The fake's unit vector of `text`: the same for the same text, in every process."""
    rng = random.Random(hashlib.sha256(f"openai:{text}".encode()).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.hypot(*vector)
    return [value / norm for value in vector]


def sse(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


class OpenAIHandler(FakeHandler):
    fake: FakeOpenAI

    def answer(self, recorded: Recorded, turn: Turn) -> None:
        if recorded.path.endswith("/embeddings"):
            self.embeddings(recorded.body if isinstance(recorded.body, dict) else {})
            return
        if not recorded.path.endswith("/chat/completions"):
            self.send_json(404, _error(f"no route {recorded.path}", "invalid_request_error"))
            return
        body = recorded.body if isinstance(recorded.body, dict) else {}
        if not body.get("stream"):
            self.hold_whole(turn)
            self.send_json(200, self.completion(body, turn))
            return
        self.start_stream("text/event-stream", {"x-request-id": "fake-request"})
        events, end = self.chunks(body, turn)
        error = sse(_error("The model stream failed", "server_error"))
        self.stream_events(events, turn, error, end)

    def fail(self, fail: Fail) -> None:
        kind, code = ERROR_TYPES.get(fail.status, ("server_error", None))
        headers = {"x-request-id": "fake-request"}
        if fail.retry_after_ms is not None:
            headers["retry-after-ms"] = str(fail.retry_after_ms)
        self.send_json(fail.status, _error(fail.message, kind, fail.code or code), headers)

    def chunks(self, body: dict[str, Any], turn: Turn) -> tuple[list[bytes], int]:
        """The SSE events of `turn`, and where its closing events (finish, usage) begin."""
        usage = (body.get("stream_options") or {}).get("include_usage", False)
        base: dict[str, Any] = {
            "id": f"chatcmpl-fake-{len(self.fake.requests)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": None,
        }
        if usage:
            base["usage"] = None

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**base, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events.extend(chunk({"content": text}) for text in turn.text)
        for index, call in enumerate(turn.calls):
            for number, fragment in enumerate(call.fragments()):
                function: dict[str, Any] = {"arguments": fragment}
                tool_call: dict[str, Any] = {"index": index, "function": function}
                if number == 0:
                    tool_call.update(id=self.fake.call_id(call, "call_fake_"), type="function")
                    function["name"] = call.name
                events.append(chunk({"tool_calls": [tool_call]}))
        end = len(events)
        events.append(chunk({}, _stop(turn)))
        if usage:
            events.append(sse({**base, "choices": [], "usage": _usage(turn)}))
        events.append(sse("[DONE]"))
        return events, end

    def completion(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(turn.text) or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": self.fake.call_id(call, "call_fake_"),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.text()},
                }
                for call in turn.calls
            ]
        return {
            "id": f"chatcmpl-fake-{len(self.fake.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": _stop(turn)}
            ],
            "usage": _usage(turn),
        }

    def embeddings(self, body: dict[str, Any]) -> None:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if (
            not isinstance(texts, list)
            or not texts
            or not all(isinstance(t, str) and t for t in texts)
        ):
            message = "'$.input' is invalid. Please check the API reference."
            self.send_json(400, _error(message, "invalid_request_error"))
            return
        model = body.get("model", "")
        size = body.get("dimensions") or EMBEDDING_SIZES.get(model, DEFAULT_EMBEDDING_SIZE)
        data = [
            {"object": "embedding", "index": index, "embedding": _encode(vector, body)}
            for index, vector in enumerate(openai_embedding(text, size) for text in texts)
        ]
        if self.fake.reverse_embeddings:
            data.reverse()
        tokens = sum(len(text.split()) for text in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        document = {"object": "list", "data": data, "model": model, "usage": usage}
        self.send_json(200, document, {"x-request-id": "fake-request"})


def _encode(vector: list[float], body: dict[str, Any]) -> list[float] | str:
    if body.get("encoding_format") != "base64":
        return vector
    floats = array.array("f", vector)  # float32, little-endian on the wire
    if sys.byteorder == "big":
        floats.byteswap()
    return base64.b64encode(floats.tobytes()).decode()


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _stop(turn: Turn) -> str:
    return turn.stop or ("tool_calls" if turn.calls else "stop")


def _usage(turn: Turn) -> dict[str, Any]:
    prompt, completion = turn.usage
    # prompt_tokens counts the cached ones too; their share is in the details.
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": turn.cached, "audio_tokens": 0},
    }


class FakeOpenAI(FakeServer):
    """OpenAI's chat completions, streamed or not, and embeddings, scripted by the test."""

    handler = OpenAIHandler
    reverse_embeddings = False

    def reset(self) -> None:
        super().reset()
        self.reverse_embeddings = False

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def model_of(self, recorded: Recorded) -> str | None:
        model = recorded.body.get("model") if isinstance(recorded.body, dict) else None
        return model if isinstance(model, str) else None
