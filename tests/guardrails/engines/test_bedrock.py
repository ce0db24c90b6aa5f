"""The Bedrock guardrail engine through the real boto3, over HTTP, against the fake Bedrock."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any, Final

import pytest

from agentbuilder import aws
from guardrails.engines.base import PASS, Span, Stage, Verdict
from guardrails.engines.bedrock import BedrockGuardrailEngine
from tests.fakes.bedrock import (
    GUARDRAIL_BLOCKED,
    FakeBedrock,
    Guard,
    bedrock_environment,
    content_filter,
    denied_topic,
    grounding,
    pii_match,
    regex_match,
    word_match,
)
from tests.fakes.server import Fail

GUARDRAIL = "gr0abc123"
ARN = "arn:aws:bedrock:us-east-1:123456789012:guardrail/gr0abc123"
INTERVENED: Final = "GUARDRAIL_INTERVENED"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    # One server per module, so boto3 clients (costly to build) serve every test.
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeBedrock) -> FakeBedrock:
    server.reset()
    return server


def engine(**kwargs: Any) -> BedrockGuardrailEngine:
    defaults: dict[str, Any] = {"guardrail_id": GUARDRAIL, "max_retries": 0, "timeout": 5.0}
    return BedrockGuardrailEngine(**(defaults | kwargs))


def check(text: str = "Hello there", stage: Stage = "input", **kwargs: Any) -> Verdict:
    return asyncio.run(engine(**kwargs).acheck(text, stage))


# ---------------------------------------------------------------- the answer


def test_intervention_blocks_and_names_the_policy(fake: FakeBedrock) -> None:
    fake.script(Guard(action=INTERVENED, assessments=[content_filter("INSULTS", "HIGH")]))

    verdict = check("You are a worthless idiot")

    assert verdict.blocked
    assert verdict.score == 1.0
    assert verdict.reason == (
        "Bedrock guardrail intervened: content filter INSULTS (HIGH confidence) "
        f'(Bedrock\'s message: "{GUARDRAIL_BLOCKED}")'
    )
    assert verdict.spans == ()
    assert (verdict.kind, verdict.detector, verdict.match) == ("insult", "Bedrock guardrail", None)


@pytest.mark.parametrize(
    ("assessment", "kind"),
    [
        (content_filter("PROMPT_ATTACK", "HIGH"), "override"),
        (content_filter("HATE"), "hate"),
        (content_filter("SEXUAL"), "sexual"),
        (denied_topic("Investment advice"), "denied_topic"),
        (pii_match("bob@example.com"), "sensitive_information"),
        (grounding("GROUNDING", 0.21, 0.5), "ungrounded"),
    ],
)
def test_what_fired_is_the_kind_of_the_block(
    fake: FakeBedrock, assessment: dict[str, Any], kind: str
) -> None:
    fake.script(Guard(action=INTERVENED, assessments=[assessment]))
    assert check("Mail bob@example.com about it").kind == kind


def test_none_passes(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE"))

    assert check("What is 3 times 5?") == PASS
    assert len(fake.requests) == 1


def test_input_and_output_stages_send_their_source_and_text(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE"), Guard(action="NONE"))

    check("Tell me a joke", "input")
    check("Why did the chicken", "output")

    assert fake.bodies == [
        {"source": "INPUT", "content": [{"text": {"text": "Tell me a joke"}}]},
        {"source": "OUTPUT", "content": [{"text": {"text": "Why did the chicken"}}]},
    ]
    assert fake.guardrails() == [(GUARDRAIL, "DRAFT"), (GUARDRAIL, "DRAFT")]


def test_guardrail_arn_and_version_travel_in_the_path(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE"))

    check(guardrail_id=ARN, version="7")

    assert fake.guardrails() == [(ARN, "7")]
    assert fake.requests[0].path.endswith("/version/7/apply")


def test_every_policy_that_fired_is_summarised(fake: FakeBedrock) -> None:
    fake.script(
        Guard(
            action=INTERVENED,
            assessments=[
                denied_topic("Investment advice"),
                {
                    "contentPolicy": {
                        "filters": [
                            {"type": "HATE", "confidence": "MEDIUM", "action": "BLOCKED"},
                            # listed but not acted on (a full-scope answer): not a finding
                            {"type": "VIOLENCE", "confidence": "LOW", "action": "NONE"},
                        ]
                    }
                },
                regex_match("AB-1234", "ticket", r"[A-Z]{2}-\d{4}"),
                grounding("GROUNDING", 0.21, 0.5),
            ],
        )
    )

    reason = check("Buy AB-1234 shares now", "output").reason

    assert reason.startswith(
        "Bedrock guardrail intervened: denied topic 'Investment advice'; "
        "content filter HATE (MEDIUM confidence); sensitive information regex 'ticket'; "
        "contextual grounding GROUNDING (score 0.21 below threshold 0.50)"
    )
    assert "VIOLENCE" not in reason


def test_matches_become_spans_and_stay_out_of_the_reason(fake: FakeBedrock) -> None:
    text = "Mail bob@example.com, you damn fool. DAMN."
    fake.script(
        Guard(
            action=INTERVENED,
            assessments=[word_match("damn", managed=True), pii_match("bob@example.com")],
            outputs=["Sorry, the model cannot answer this question." * 5],  # long: left out
        )
    )

    verdict = check(text)

    assert verdict.blocked
    assert verdict.spans == (
        Span(5, 20, "EMAIL"),
        Span(26, 30, "PROFANITY"),
        Span(37, 41, "PROFANITY"),
    )
    assert [text[s.start : s.end] for s in verdict.spans] == ["bob@example.com", "damn", "DAMN"]
    assert verdict.reason == (
        "Bedrock guardrail intervened: managed word list PROFANITY; sensitive information EMAIL"
    )
    assert "bob@" not in verdict.reason
    # The word is what a notice quotes; the address is personal data and is not.
    assert (verdict.kind, verdict.match) == ("profanity", Span(26, 30, "PROFANITY"))


def test_custom_word_and_repeated_findings(fake: FakeBedrock) -> None:
    fake.script(
        Guard(
            action=INTERVENED,
            assessments=[word_match("frobnicate"), word_match("frobnicate")],
            outputs=[],
        )
    )

    verdict = check("please frobnicate it")

    assert verdict.reason == "Bedrock guardrail intervened: custom word ×2"
    assert verdict.spans == (Span(7, 17, "word"),)
    assert (verdict.kind, verdict.match) == ("custom_word", Span(7, 17, "word"))


def test_masked_sensitive_information_still_blocks(fake: FakeBedrock) -> None:
    # Bedrock only anonymised the number, but a Verdict cannot rewrite text: it blocks.
    fake.script(
        Guard(
            action=INTERVENED,
            assessments=[pii_match("555-0100", "PHONE", action="ANONYMIZED")],
            outputs=["Call me at {PHONE}"],
        )
    )

    verdict = check("Call me at 555-0100", "output")

    assert verdict.blocked
    assert verdict.spans == (Span(11, 19, "PHONE"),)
    assert verdict.reason == (
        "Bedrock guardrail intervened: sensitive information PHONE (anonymized) "
        '(Bedrock\'s message: "Call me at {PHONE}")'
    )


def test_intervention_without_assessments_uses_the_action_reason(fake: FakeBedrock) -> None:
    fake.script(Guard(action=INTERVENED, action_reason="Guardrail blocked.", outputs=[]))

    verdict = check()

    assert verdict.blocked
    assert verdict.reason == "Bedrock guardrail intervened: Guardrail blocked."


def test_blank_text_passes_without_a_call(fake: FakeBedrock) -> None:
    assert check("  \n ") == PASS
    assert fake.requests == []


# ---------------------------------------------------------------- failures


def test_throttled_check_is_retried_then_passes(fake: FakeBedrock) -> None:
    fake.script(Fail(429, "Too many requests"), Guard(action="NONE"))

    assert check(max_retries=2) == PASS
    assert len(fake.requests) == 2
    assert fake.bodies[0] == fake.bodies[1]


def test_server_error_every_time_fails_closed_after_max_retries(fake: FakeBedrock) -> None:
    fake.fallback = Fail(500, "Internal failure")

    verdict = check(max_retries=1)

    assert len(fake.requests) == 2
    assert verdict.blocked
    assert verdict.score == 1.0
    assert verdict.reason.startswith("guardrail check failed: ")
    assert "InternalServerException: Internal failure" in verdict.reason
    assert "2 attempts" in verdict.reason


def test_server_error_every_time_fails_open_when_asked(fake: FakeBedrock) -> None:
    fake.fallback = Fail(500, "Internal failure")

    verdict = check(max_retries=1, fail_open=True)

    assert len(fake.requests) == 2
    assert not verdict.blocked
    assert verdict.action == "NONE"
    assert verdict.score == 0.0
    assert verdict.reason.startswith("guardrail check failed, text let through: ")
    assert "InternalServerException" in verdict.reason


def test_refused_call_is_not_retried_and_fails_closed(fake: FakeBedrock) -> None:
    fake.fallback = Fail(404, "Guardrail gr0abc123 not found")

    verdict = check(max_retries=3)

    assert len(fake.requests) == 1
    assert verdict.blocked
    assert "ResourceNotFoundException: Guardrail gr0abc123 not found" in verdict.reason
    assert (verdict.kind, verdict.detector) == (None, "Bedrock guardrail")  # found nothing


def test_slow_answer_is_a_timeout_and_fails_closed(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE", delay=2.0))

    verdict = check(timeout=0.3)

    assert verdict.blocked
    assert verdict.reason.startswith("guardrail check failed: Bedrock did not answer in time")
    assert len(fake.requests) == 1


def test_slow_answer_fails_open_when_asked(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE", delay=2.0))

    verdict = check(timeout=0.3, fail_open=True)

    assert not verdict.blocked
    assert "did not answer in time" in verdict.reason


def test_unreachable_bedrock_fails_closed(
    fake: FakeBedrock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f"http://127.0.0.1:{port}")
    aws.clear_cache()
    try:
        verdict = check(max_retries=0, timeout=1.0)
    finally:
        monkeypatch.undo()
        aws.clear_cache()

    assert verdict.blocked
    assert verdict.reason.startswith("guardrail check failed: Bedrock could not be reached")
    assert fake.requests == []


def test_unknown_action_fails_closed(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE", units={"contentPolicyUnits": 1}))
    fake.script(Guard(action="SOMETHING_NEW"))  # type: ignore[arg-type]

    assert check() == PASS
    verdict = check()

    assert verdict.blocked
    assert "unknown action 'SOMETHING_NEW'" in verdict.reason


# ---------------------------------------------------------------- the engine itself


def test_slow_check_does_not_hold_up_another(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE", delay=0.5), Guard(action=INTERVENED))
    guard = engine()

    async def run() -> list[str]:
        finished: list[str] = []

        async def one(text: str) -> None:
            await guard.acheck(text, "output")
            finished.append(text)

        slow = asyncio.create_task(one("first"))
        while not fake.requests:
            await asyncio.sleep(0.01)
        await one("second")
        await slow
        return finished

    assert asyncio.run(run()) == ["second", "first"]


def test_retries_and_timeout_configure_the_shared_client(fake: FakeBedrock) -> None:
    fake.script(Guard(action="NONE"))

    check(max_retries=2, timeout=4.0)

    client = aws.client("bedrock-runtime", max_retries=2, timeout=4.0)
    assert client.meta.config.retries["total_max_attempts"] == 3
    assert client.meta.config.read_timeout == 4.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"guardrail_id": ""}, "needs its guardrailId"),
        ({"guardrail_id": "  "}, "needs its guardrailId"),
        ({"version": "latest"}, "DRAFT"),
        ({"version": "0"}, "DRAFT"),
    ],
)
def test_bad_configuration_is_refused_when_built(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        engine(**kwargs)


def test_numeric_version_is_accepted() -> None:
    assert engine(version=3).version == "3"


def test_guard_takes_keyword_arguments_only() -> None:
    with pytest.raises(TypeError):
        Guard(INTERVENED)  # type: ignore[arg-type]
