"""A fake Bedrock Runtime that the real boto3 talks to over HTTP.

`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`
frames; `POST /model/{modelId}/converse` answers the same turn as one JSON document;
`POST /guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply` (ApplyGuardrail)
answers a scripted `Guard`; `POST /model/{modelId}/invoke` (InvokeModel) answers a `Turn` as
Titan text embeddings v2 would: `{"embedding", "inputTextTokenCount"}`, the vector derived
from the text (`titan_embedding`). Bedrock Agent Runtime's `POST /rerank` (Rerank) scores
each inline text by the share of the query's words it holds (`rerank_score`), or answers a
scripted `Ranked`. Errors are rest-json errors: a status, `x-amzn-ErrorType` and
`{"message": ...}`.

    with FakeBedrock() as fake:
        fake.script(Fail(429), Turn(text=["Hel", "lo"]))
        fake.fail_model("amazon.nova-micro-v1:0", Fail(503))  # its every call, retries too
        fake.script(Guard(action="GUARDRAIL_INTERVENED", assessments=[content_filter("INSULTS")]))
        fake.fallback = Turn()  # every InvokeModel embeds its text, every Rerank scores
        fake.script(Fail(429), Ranked(results=[{"index": 1, "relevanceScore": 0.9}]))
        # point boto3 at fake.url (AWS_ENDPOINT_URL_BEDROCK_RUNTIME and …_AGENT_RUNTIME)
"""

from __future__ import annotations

import binascii
import hashlib
import json
import math
import random
import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

import pytest

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
TITAN_DIMENSIONS = (256, 512, 1024)
GUARDRAIL_BLOCKED = "Sorry, the model cannot answer this question."
RERANK_MAX = 1000  # sources per Rerank call, and results


@dataclass(frozen=True, kw_only=True)
class Guard(Turn):
    """One ApplyGuardrail answer, keyword arguments only (a `Turn` so that it queues like
    one, as `fake.script(...)` or `fake.fallback`; of Turn's own fields only `delay` applies).

    action: the guardrail's verdict; outputs: the texts Bedrock sends back (default: its
    stock blocked message when it intervened, nothing otherwise); assessments: the
    `GuardrailAssessment` objects, as the wire spells them (see `content_filter` and
    friends); action_reason: the optional `actionReason`.
    """

    action: Literal["NONE", "GUARDRAIL_INTERVENED"] = "NONE"
    outputs: tuple[str, ...] | list[str] | None = None
    assessments: tuple[dict[str, Any], ...] | list[dict[str, Any]] = ()
    action_reason: str | None = None
    units: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.text or self.calls:
            raise TypeError("Guard takes keyword arguments: Guard(action=..., assessments=...)")


@dataclass(frozen=True, kw_only=True)
class Ranked(Turn):
    """One Rerank answer as scripted: `results` are sent as they are (`{"index",
    "relevanceScore"}` objects, or anything malformed), whatever the request asked."""

    results: Any = ()

    def __post_init__(self) -> None:
        if self.text or self.calls:
            raise TypeError("Ranked takes keyword arguments: Ranked(results=[...])")


def rerank_score(query: str, text: str) -> float:
    """The fake reranker's relevance of `text`: the share of the query's distinct words
    (case-folded) that it holds."""
    wanted = set(re.findall(r"\w+", query.lower()))
    found = wanted & set(re.findall(r"\w+", text.lower()))
    return len(found) / len(wanted) if wanted else 0.0


def content_filter(
    kind: str, confidence: str = "HIGH", action: str = "BLOCKED", strength: str = "HIGH"
) -> dict[str, Any]:
    """An assessment of the content policy with one filter (INSULTS, HATE, PROMPT_ATTACK …)."""
    return {
        "contentPolicy": {
            "filters": [
                {
                    "type": kind,
                    "confidence": confidence,
                    "filterStrength": strength,
                    "action": action,
                    "detected": action != "NONE",
                }
            ]
        }
    }


def denied_topic(name: str, action: str = "BLOCKED") -> dict[str, Any]:
    topic = {"name": name, "type": "DENY", "action": action, "detected": action != "NONE"}
    return {"topicPolicy": {"topics": [topic]}}


def word_match(match: str, managed: bool = False, action: str = "BLOCKED") -> dict[str, Any]:
    """A word policy assessment: a custom word, or a word of the managed PROFANITY list."""
    word: dict[str, Any] = {"match": match, "action": action, "detected": action != "NONE"}
    if managed:
        return {
            "wordPolicy": {"customWords": [], "managedWordLists": [{**word, "type": "PROFANITY"}]}
        }
    return {"wordPolicy": {"customWords": [word], "managedWordLists": []}}


def pii_match(match: str, kind: str = "EMAIL", action: str = "BLOCKED") -> dict[str, Any]:
    entity = {"match": match, "type": kind, "action": action, "detected": action != "NONE"}
    return {"sensitiveInformationPolicy": {"piiEntities": [entity], "regexes": []}}


def regex_match(match: str, name: str, regex: str, action: str = "BLOCKED") -> dict[str, Any]:
    found = {"name": name, "match": match, "regex": regex, "action": action}
    return {
        "sensitiveInformationPolicy": {
            "piiEntities": [],
            "regexes": [{**found, "detected": action != "NONE"}],
        }
    }


def grounding(kind: str, score: float, threshold: float, action: str = "BLOCKED") -> dict[str, Any]:
    found = {"type": kind, "threshold": threshold, "score": score, "action": action}
    return {"contextualGroundingPolicy": {"filters": [{**found, "detected": action != "NONE"}]}}


def titan_embedding(text: str, dimension: int = 1024, normalize: bool = True) -> list[float]:
    """The fake Titan's vector of `text`: the same for the same text, in every process."""
    rng = random.Random(hashlib.sha256(f"titan:{text}".encode()).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    if not normalize:
        return vector
    norm = math.hypot(*vector)
    return [value / norm for value in vector]


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
        if recorded.path.endswith("/apply") and recorded.path.startswith("/guardrail/"):
            if isinstance(turn, Guard):
                self.send_json(200, self.guard(recorded, turn), {"x-amzn-RequestId": "fake"})
            else:
                self.send_json(500, {"message": "the fake was scripted a Turn, not a Guard"})
        elif isinstance(turn, Guard):
            self.send_json(500, {"message": f"the fake was scripted a Guard for {recorded.path}"})
        elif recorded.path == "/rerank":
            self.rerank(recorded, turn)
        elif recorded.path.endswith("/converse-stream"):
            self.start_stream(EVENTSTREAM, {"x-amzn-RequestId": "fake-request"})
            events, end = self.events(turn)
            error = encode_exception("internalServerException", "The model stream failed")
            self.stream_events(events, turn, error, end)
        elif recorded.path.endswith("/converse"):
            self.hold_whole(turn)
            self.send_json(200, self.document(turn))
        elif recorded.path.endswith("/invoke"):
            self.titan(recorded)
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

    def titan(self, recorded: Recorded) -> None:
        """InvokeModel of Titan text embeddings v2, with its validation of the body."""
        body = recorded.body if isinstance(recorded.body, dict) else {}
        text: Any = body.get("inputText")
        dimension = body.get("dimensions", 1024)
        problem = None
        if not isinstance(text, str) or not text:
            problem = "#/inputText: expected minLength: 1"
        elif dimension not in TITAN_DIMENSIONS:
            problem = f"#/dimensions: {dimension} is not a valid enum value"
        if problem is not None:
            message = f"Malformed input request: {problem}, please reformat your input."
            self.send_json(400, {"message": message}, {"x-amzn-ErrorType": "ValidationException"})
            return
        tokens = len(text.split())
        document = {
            "embedding": titan_embedding(text, dimension, body.get("normalize", True)),
            "inputTextTokenCount": tokens,
        }
        self.send_json(200, document, {"X-Amzn-Bedrock-Input-Token-Count": str(tokens)})

    def rerank(self, recorded: Recorded, turn: Turn) -> None:
        """Rerank, with the API's validation of the body; best first, stable among equals."""
        try:
            query, texts, count = _rerank_request(recorded.body)
        except ValueError as exc:
            self.send_json(400, {"message": str(exc)}, {"x-amzn-ErrorType": "ValidationException"})
            return
        if isinstance(turn, Ranked):
            self.send_json(200, {"results": turn.results})
            return
        scores = [rerank_score(query, text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])[:count]
        self.send_json(200, {"results": [{"index": i, "relevanceScore": scores[i]} for i in order]})

    def guard(self, recorded: Recorded, guard: Guard) -> dict[str, Any]:
        """The ApplyGuardrailResponse document of `guard`."""
        content = recorded.body.get("content", []) if isinstance(recorded.body, dict) else []
        chars = sum(len(block.get("text", {}).get("text", "")) for block in content)
        units = -(-chars // 1000)  # Bedrock bills text in units of up to 1,000 characters
        outputs = guard.outputs
        if outputs is None:
            outputs = [GUARDRAIL_BLOCKED] if guard.action == "GUARDRAIL_INTERVENED" else []
        usage = dict.fromkeys(
            (
                "topicPolicyUnits",
                "contentPolicyUnits",
                "wordPolicyUnits",
                "sensitiveInformationPolicyUnits",
                "sensitiveInformationPolicyFreeUnits",
                "contextualGroundingPolicyUnits",
            ),
            units,
        )
        document: dict[str, Any] = {
            "usage": usage | guard.units,
            "action": guard.action,
            "outputs": [{"text": text} for text in outputs],
            "assessments": list(guard.assessments),
            "guardrailCoverage": {"textCharacters": {"guarded": chars, "total": chars}},
        }
        if guard.action_reason is not None:
            document["actionReason"] = guard.action_reason
        return document


def _rerank_request(body: Any) -> tuple[str, list[str], int]:
    """(query, source texts, numberOfResults) of a Rerank body; ValueError with what the
    API's ValidationException would say."""
    try:
        (query,) = body["queries"]
        text = query["textQuery"]["text"] if query["type"] == "TEXT" else None
        sources = body["sources"]
        texts = [
            source["inlineDocumentSource"]["textDocument"]["text"]
            for source in sources
            if source["type"] == "INLINE" and source["inlineDocumentSource"]["type"] == "TEXT"
        ]
        config = body["rerankingConfiguration"]
        bedrock = config["bedrockRerankingConfiguration"]
        arn = bedrock["modelConfiguration"]["modelArn"]
        count = bedrock.get("numberOfResults", len(texts))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed Rerank request ({type(exc).__name__}: {exc})") from None
    if not isinstance(text, str) or not text:
        raise ValueError("queries[0] must be a TEXT query with a non-empty text")
    if len(texts) != len(sources) or not 1 <= len(texts) <= RERANK_MAX or not all(texts):
        raise ValueError(f"sources must be 1 to {RERANK_MAX} non-empty INLINE TEXT documents")
    if config.get("type") != "BEDROCK_RERANKING_MODEL" or not arn:
        raise ValueError("rerankingConfiguration must be a BEDROCK_RERANKING_MODEL with a modelArn")
    if not isinstance(count, int) or not 1 <= count <= RERANK_MAX:
        raise ValueError(f"numberOfResults must be 1 to {RERANK_MAX}")
    return text, texts, count


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return encode_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})


def _stop(turn: Turn) -> str:
    return turn.stop or ("tool_use" if turn.calls else "end_turn")


def _usage(turn: Turn) -> dict[str, int]:
    input_tokens, output_tokens = turn.usage
    # Converse counts cache reads apart from inputTokens, and in totalTokens.
    usage = {
        "inputTokens": input_tokens - turn.cached,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }
    if turn.cached:
        usage |= {"cacheReadInputTokens": turn.cached, "cacheWriteInputTokens": 0}
    return usage


class FakeBedrock(FakeServer):
    """Bedrock Runtime's Converse, ConverseStream, ApplyGuardrail and InvokeModel (Titan
    embeddings), and Bedrock Agent Runtime's Rerank, scripted by the test."""

    handler = BedrockHandler

    def model_ids(self) -> list[str]:
        """The model id of every request, in order (the URL path, decoded)."""
        return [unquote(r.path.split("/")[2]) for r in self.requests]

    def model_of(self, recorded: Recorded) -> str | None:
        parts = recorded.path.split("/")
        return unquote(parts[2]) if parts[1:2] == ["model"] and len(parts) > 2 else None

    def input_texts(self) -> list[str]:
        """The `inputText` of every InvokeModel request, in the order they arrived."""
        return [
            r.body.get("inputText", "")
            for r in self.requests
            if r.path.endswith("/invoke") and isinstance(r.body, dict)
        ]

    def reranks(self) -> list[dict[str, Any]]:
        """The body of every Rerank request, in the order they arrived."""
        return [r.body for r in self.requests if r.path == "/rerank" and isinstance(r.body, dict)]

    def guardrails(self) -> list[tuple[str, str]]:
        """(identifier, version) of every ApplyGuardrail request, in order (decoded)."""
        return [
            (unquote(parts[2]), unquote(parts[4]))
            for r in self.requests
            if (parts := r.path.split("/"))[1:2] == ["guardrail"]
        ]


@contextmanager
def bedrock_environment(home: Path) -> Iterator[FakeBedrock]:
    """A FakeBedrock that boto3 finds through the environment, as a deployment would
    (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME), with dummy
    credentials, no stray AWS settings of the machine, and botocore's retry backoff shrunk
    so throttling tests stay fast."""
    from botocore.retries.standard import ExponentialBackoff

    from agentbuilder import aws

    with FakeBedrock() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url)
        patch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", fake.url)
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.setenv("AWS_CONFIG_FILE", str(home / "config"))
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "credentials"))
        for name in (
            "AWS_REGION",
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_ENDPOINT_URL",
            "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        ):
            patch.delenv(name, raising=False)
        patch.setattr(
            ExponentialBackoff,
            "_DEFAULT_BACKOFF_CONFIG",
            {"throttling_base_scale": 0.01, "non_throttling_base_scale": 0.01},
        )
        aws.clear_cache()
        yield fake
        aws.clear_cache()
