"""An Amazon Bedrock guardrail, through the ApplyGuardrail API: one call per checked text.

boto3 blocks, so the call runs in a worker thread. Retries (throttling, 5xx, connection
errors and read timeouts) are botocore's own, from the shared client's retry config
(`max_retries` retries after the first attempt); `timeout` bounds each socket read.

Bedrock answers `GUARDRAIL_INTERVENED` or `NONE`. An intervention blocks the text, even
one that only masks sensitive information: a Verdict cannot rewrite text. The reason
names the policies that fired, never the text they matched (it may be personal data);
where Bedrock says what it matched, the verdict's spans point at it. Bedrock's own blocked
message is not shown to users (the platform shows the guardrail's configured message).

When the check cannot be made (Bedrock refuses the call, times out, cannot be reached), the
engine fails closed and blocks, or with `fail_open` lets the text through; either way the
verdict's reason says the check failed.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import urllib3.exceptions
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)

from agentbuilder import aws
from guardrails.engines.base import PASS, Kind, Span, Stage, Verdict

logger = logging.getLogger(__name__)

VERSION = re.compile(r"DRAFT|[1-9][0-9]{0,7}")
MAX_REASON = 300
MAX_MESSAGE = 120  # Bedrock's blocked message goes into the reason only when this short
MAX_SPANS = 100
DETECTOR = "Bedrock guardrail"
# What Bedrock's content filters and managed word lists look for, as kinds. A prompt attack
# is reported as an override: Bedrock does not say which; at the context stage it is
# reported as indirect (guardrails.engines.base.kind_at).
FILTER_KINDS: dict[str, Kind] = {
    "PROMPT_ATTACK": "override",
    "HATE": "hate",
    "INSULTS": "insult",
    "SEXUAL": "sexual",
    "VIOLENCE": "violence",
    "MISCONDUCT": "misconduct",
}
WORD_LIST_KINDS: dict[str, Kind] = {"PROFANITY": "profanity"}


class BedrockGuardrailEngine:
    """One Bedrock guardrail (an id or ARN, and a version) as a guardrail engine."""

    def __init__(
        self,
        guardrail_id: str,
        *,
        version: str = "DRAFT",
        max_retries: int = 3,
        timeout: float = 10.0,
        fail_open: bool = False,
    ) -> None:
        guardrail_id = str(guardrail_id or "").strip()
        version = str(version).strip()
        if not guardrail_id:
            raise ValueError("A Bedrock guardrail needs its guardrailId.")
        if not VERSION.fullmatch(version):
            raise ValueError(f'Bedrock guardrail version {version!r}: "DRAFT" or a number.')
        self.guardrail_id = guardrail_id
        self.version = version
        self.max_retries = max(0, int(max_retries))
        self.timeout = float(timeout)
        self.fail_open = fail_open

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, fail_open: bool) -> BedrockGuardrailEngine:
        """The guardrail `config` names (`guardrailId`, `version`, `maxRetries`, `timeout`)."""
        return cls(
            guardrail_id=str(config["guardrailId"]),
            version=str(config.get("version", "DRAFT")),
            max_retries=int(config.get("maxRetries", 3)),
            timeout=float(config.get("timeout", 10.0)),
            fail_open=fail_open,
        )

    def __repr__(self) -> str:
        return f"BedrockGuardrailEngine({self.guardrail_id!r}, version={self.version!r})"

    async def acheck(self, text: str, stage: Stage) -> Verdict:
        if not text.strip():
            return PASS  # nothing to judge, and Bedrock bills by the call
        try:
            answer = await asyncio.to_thread(self._apply, text, stage)
            action = answer.get("action")
            if action == "NONE":
                return PASS
            if action != "GUARDRAIL_INTERVENED":
                raise ValueError(f"Bedrock answered an unknown action {action!r}")
            return intervention(answer, text)
        except Exception as exc:
            return self._failed(exc, stage)

    def _apply(self, text: str, stage: Stage) -> dict[str, Any]:
        client = aws.client("bedrock-runtime", max_retries=self.max_retries, timeout=self.timeout)
        answer: dict[str, Any] = client.apply_guardrail(
            guardrailIdentifier=self.guardrail_id,
            guardrailVersion=self.version,
            source="OUTPUT" if stage == "output" else "INPUT",
            content=[{"text": {"text": text}}],
        )
        return answer

    def _failed(self, exc: Exception, stage: Stage) -> Verdict:
        detail = describe_failure(exc)
        logger.warning(
            "Bedrock guardrail %s (version %s) could not check the %s: %s; %s",
            self.guardrail_id,
            self.version,
            stage,
            detail,
            "letting it through (fail open)" if self.fail_open else "blocking it (fail closed)",
        )
        if self.fail_open:
            return Verdict(
                reason=_cut(f"guardrail check failed, text let through: {detail}"),
                detector=DETECTOR,
            )
        return Verdict(
            action="BLOCKED",
            score=1.0,
            reason=_cut(f"guardrail check failed: {detail}"),
            detector=DETECTOR,
        )


def intervention(answer: dict[str, Any], text: str) -> Verdict:
    """The verdict on `text` of an ApplyGuardrail answer whose action is an intervention."""
    found = _Found()
    for assessment in answer.get("assessments") or []:
        _assess(assessment, text, found)
    findings, spans, kinds = found.findings, found.spans, found.kinds
    reason = "Bedrock guardrail intervened"
    if findings:
        counts = Counter(findings)
        reason += ": " + "; ".join(f"{f} ×{counts[f]}" if counts[f] > 1 else f for f in counts)
    elif answer.get("actionReason"):
        reason += f": {answer['actionReason']}"
    message = " ".join(o.get("text") or "" for o in answer.get("outputs") or []).strip()
    if message and len(message) <= MAX_MESSAGE:
        reason += f' (Bedrock\'s message: "{message}")'
    unique = sorted(set(spans), key=lambda s: (s.start, s.end, s.label))[:MAX_SPANS]
    return Verdict(
        action="BLOCKED",
        score=1.0,
        spans=tuple(unique),
        reason=_cut(reason),
        kind=kinds[0] if kinds else None,
        detector=DETECTOR,
        match=min(found.words, key=lambda s: s.start, default=None),
    )


@dataclass
class _Found:
    """What fired in an answer's assessments: the findings of the reason, where (`spans`),
    what it is (`kinds`), and where word policies matched (`words`: the match a notice may
    quote; sensitive information's is personal data)."""

    findings: list[str] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    kinds: list[Kind] = field(default_factory=list)
    words: list[Span] = field(default_factory=list)


def _assess(assessment: dict[str, Any], text: str, found: _Found) -> None:
    """Add what fired in one GuardrailAssessment to `found`."""
    findings, spans, kinds = found.findings, found.spans, found.kinds
    for topic in _fired((assessment.get("topicPolicy") or {}).get("topics")):
        findings.append(f"denied topic {topic.get('name', '?')!r}")
        kinds.append("denied_topic")
    for content in _fired((assessment.get("contentPolicy") or {}).get("filters")):
        confidence = content.get("confidence")
        suffix = f" ({confidence} confidence)" if confidence else ""
        findings.append(f"content filter {content.get('type', '?')}{suffix}")
        kinds.extend(_kind(FILTER_KINDS, content.get("type")))
    words = assessment.get("wordPolicy") or {}
    matched: list[Span] = []
    for word in _fired(words.get("customWords")):
        findings.append("custom word")
        matched.extend(_spans(text, word.get("match"), "word"))
        kinds.append("custom_word")
    for word in _fired(words.get("managedWordLists")):
        kind = word.get("type") or "managed"
        findings.append(f"managed word list {kind}")
        matched.extend(_spans(text, word.get("match"), kind))
        kinds.extend(_kind(WORD_LIST_KINDS, kind))
    spans.extend(matched)
    found.words.extend(matched)
    sensitive = assessment.get("sensitiveInformationPolicy") or {}
    for entity in _fired(sensitive.get("piiEntities")):
        kind = entity.get("type") or "PII"
        findings.append(f"sensitive information {kind}{_masked(entity)}")
        spans.extend(_spans(text, entity.get("match"), kind))
        kinds.append("sensitive_information")
    for regex in _fired(sensitive.get("regexes")):
        name = regex.get("name") or "regex"
        findings.append(f"sensitive information regex {name!r}{_masked(regex)}")
        spans.extend(_spans(text, regex.get("match"), name))
        kinds.append("sensitive_information")
    for grounding in _fired((assessment.get("contextualGroundingPolicy") or {}).get("filters")):
        score, threshold = grounding.get("score"), grounding.get("threshold")
        detail = ""
        if isinstance(score, int | float) and isinstance(threshold, int | float):
            detail = f" (score {score:.2f} below threshold {threshold:.2f})"
        findings.append(f"contextual grounding {grounding.get('type', '?')}{detail}")
        kinds.append("ungrounded")


def _kind(kinds: Mapping[str, Kind], name: Any) -> list[Kind]:
    kind = kinds.get(name) if isinstance(name, str) else None
    return [] if kind is None else [kind]


def _fired(entries: Any) -> list[dict[str, Any]]:
    """The entries that made Bedrock act (a full-scope answer also lists those that did not)."""
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and _acted(e)]


def _acted(entry: dict[str, Any]) -> bool:
    action = entry.get("action")
    return bool(entry.get("detected")) if action is None else action != "NONE"


def _masked(entry: dict[str, Any]) -> str:
    return " (anonymized)" if entry.get("action") == "ANONYMIZED" else ""


def _spans(text: str, match: Any, label: str) -> list[Span]:
    """Every place `match` occurs in `text`, ignoring case (Bedrock's word filters do)."""
    if not isinstance(match, str) or not match.strip():
        return []
    found = re.finditer(re.escape(match), text, re.IGNORECASE)
    return [Span(m.start(), m.end(), label) for _, m in zip(range(MAX_SPANS), found, strict=False)]


def describe_failure(exc: BaseException) -> str:
    if isinstance(
        exc, ReadTimeoutError | ConnectTimeoutError | urllib3.exceptions.TimeoutError | TimeoutError
    ):
        return f"Bedrock did not answer in time: {exc}"
    if isinstance(exc, ClientError):
        return f"Bedrock refused the call: {aws.client_error_text(exc)}"
    if isinstance(
        exc,
        EndpointConnectionError | HTTPClientError | urllib3.exceptions.HTTPError | OSError,
    ):
        return f"Bedrock could not be reached: {exc}"
    if isinstance(exc, BotoCoreError):
        return f"Bedrock call failed: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _cut(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"
