"""A fake Bedrock Runtime that the real boto3 talks to over HTTP.

`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`
frames; `POST /model/{modelId}/converse` answers the same turn as one JSON document.
Errors are rest-json errors: a status, `x-amzn-ErrorType` and `{"message": ...}`.

    with FakeBedrock() as fake:
        fake.script(Fail(429), Turn(text=["Hel", "lo"]))
        # point boto3 at fake.url (AWS_ENDPOINT_URL_BEDROCK_RUNTIME)
"""

from __future__ import annotations

import binascii
import json
import struct
from typing import Any
from urllib.parse import unquote

from tests.fakes.server import Call, Fail, FakeHandler, FakeServer, Recorded, Turn

ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
EVENTSTREAM = "application/vnd.amazon.eventstream"


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude, its CRC, string headers, payload, message CRC."""
    header_bytes = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", _crc(prelude))
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", _crc(message))


def encode_event(event_type: str, body: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(body).encode())


def encode_exception(exception_type: str, message: str) -> bytes:
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def _header(name: str, value: str) -> bytes:
    name_bytes, value_bytes = name.encode(), value.encode()
    return (
        struct.pack(">B", len(name_bytes))
        + name_bytes
        + b"\x07"
        + struct.pack(">H", len(value_bytes))
        + value_bytes
    )


def _crc(data: bytes) -> int:
    return binascii.crc32(data) & 0xFFFFFFFF


class BedrockHandler(FakeHandler):
    def answer(self, recorded: Recorded, turn: Turn) -> None:
        if recorded.path.endswith("/converse-stream"):
            self.start_stream(EVENTSTREAM, {"x-amzn-RequestId": "fake-request"})
            events, end = self.events(turn)
            error = encode_exception("internalServerException", "The model stream failed")
            self.stream_events(events, turn, error, end)
        elif recorded.path.endswith("/converse"):
            self.send_json(200, self.document(turn))
        else:
            self.send_json(404, {"message": f"no route {recorded.path}"})

    def fail(self, fail: Fail) -> None:
        code = fail.code or ERROR_TYPES.get(fail.status, "InternalServerException")
        headers = {"x-amzn-ErrorType": code, "x-amzn-RequestId": "fake-request"}
        if fail.retry_after_ms is not None:
            headers["x-amz-retry-after"] = str(fail.retry_after_ms)
        self.send_json(fail.status, {"message": fail.message}, headers)

    def events(self, turn: Turn) -> tuple[list[bytes], int]:
        """The frames of `turn`, and where its closing frames (stop, metadata) begin."""
        events = [encode_event("messageStart", {"role": "assistant"})]
        blocks = [{"text": t} for t in turn.text]
        index = 0
        for delta in blocks:
            events.append(_delta(index, delta))
        if blocks:
            events.append(encode_event("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        for call in turn.calls:
            start = {"toolUse": {"toolUseId": self.call_id(call), "name": call.name}}
            events.append(
                encode_event("contentBlockStart", {"contentBlockIndex": index, "start": start})
            )
            events.extend(_delta(index, {"toolUse": {"input": f}}) for f in call.fragments())
            events.append(encode_event("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        end = len(events)
        events.append(encode_event("messageStop", {"stopReason": _stop(turn)}))
        events.append(
            encode_event("metadata", {"usage": _usage(turn), "metrics": {"latencyMs": 5}})
        )
        return events, end

    def document(self, turn: Turn) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"text": "".join(turn.text)}] if turn.text else []
        for call in turn.calls:
            tool_use = {"toolUseId": self.call_id(call), "name": call.name}
            content.append({"toolUse": {**tool_use, "input": json.loads(call.text() or "{}")}})
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _stop(turn),
            "usage": _usage(turn),
            "metrics": {"latencyMs": 5},
        }

    def call_id(self, call: Call) -> str:
        return self.fake.call_id(call, "tooluse_fake_")


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return encode_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})


def _stop(turn: Turn) -> str:
    return turn.stop or ("tool_use" if turn.calls else "end_turn")


def _usage(turn: Turn) -> dict[str, int]:
    input_tokens, output_tokens = turn.usage
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }


class FakeBedrock(FakeServer):
    """Bedrock Runtime's Converse and ConverseStream, scripted by the test."""

    handler = BedrockHandler

    def model_ids(self) -> list[str]:
        """The model id of every request, in order (the URL path, decoded)."""
        return [unquote(r.path.split("/")[2]) for r in self.requests]
