"""`judge`: a model's score through the platform's providers, by a forced tool; the offline
model judging deterministically, and the OpenAI provider over the `openai` SDK against the
fake server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from django.conf import settings

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse
from agents.evals.scorers.base import Expected, Observed, Score
from agents.evals.scorers.judge import JUDGE_PROMPT, Judge, JudgeOptions
from agents.llm.base import JUDGE_TOOL
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Fail, Turn

RUBRIC = "Says the refund takes five days and points to the support page."
ASKED = Observed("The refund takes five days.", input_text="How long does a refund take?")


def offline(rubric: str = RUBRIC, pass_at: float = 0.5) -> Judge:
    return Judge("local", LOCAL_MODEL, rubric, pass_at)


def scored(judge: Judge, expected: Expected, observed: Observed) -> Score:
    score = judge(expected, observed)
    assert score is not None
    return score


# ---------------------------------------------------------------- the offline model


def test_the_offline_model_scores_the_share_of_the_expected_output_s_words() -> None:
    expected = Expected(output="A refund takes five days.")
    score = scored(offline(), expected, ASKED)
    assert score.score == 1.0
    assert score.passed
    assert score.reason == "the answer has 4 of the reference's 4 words"
    assert score.usage is not None
    assert score.usage["output_tokens"] > 0


def test_without_an_expected_output_the_offline_model_reads_the_rubric() -> None:
    score = scored(offline(), Expected(), ASKED)
    # refund, takes, five, days of: says refund takes five days points support page
    assert score.score == pytest.approx(4 / 8, abs=0.001)
    assert score.passed  # at 0.5
    assert score.reason.startswith("the answer has 4 of the reference's 8 words: it lacks ")
    assert not scored(offline(pass_at=0.6), Expected(), ASKED).passed


def test_the_offline_verdict_is_deterministic_and_an_empty_answer_scores_zero() -> None:
    expected = Expected(output={"days": 5, "unit": "days"})
    first = scored(offline(), expected, Observed('{"days": 5}'))
    assert first == scored(offline(), expected, Observed('{"days": 5}'))
    empty = scored(offline(), Expected(output="five days"), Observed(""))
    assert empty.score == 0.0
    assert not empty.passed


def test_the_request_forces_the_score_tool_and_shows_everything_judged() -> None:
    request = offline().request(Expected(output="Five days."), ASKED)
    assert request.force_tool == JUDGE_TOOL
    assert request.purpose == "judge"
    assert [t.name for t in request.tools] == [JUDGE_TOOL]
    assert request.system == JUDGE_PROMPT
    text = request.messages[0].text
    for part in (RUBRIC, ASKED.input_text, "Five days.", ASKED.answer):
        assert part in text
    assert text.index("<expected_output>") < text.index("<answer>")
    assert request.context == (ASKED.answer, "Five days.")
    assert "<expected_output>" not in offline().request(Expected(), ASKED).messages[0].text


def test_ascore_serves_a_caller_with_an_event_loop() -> None:
    score = asyncio.run(offline().ascore(Expected(output="five days"), ASKED))
    assert score.passed


def test_an_unknown_provider_fails_the_case_with_why() -> None:
    score = scored(Judge("nowhere", "m", RUBRIC), Expected(), ASKED)
    assert not score.passed
    assert score.reason.startswith("the judge's model failed: unknown model provider")


# ---------------------------------------------------------------- over the openai SDK


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        for name, value in (("OPENAI_BASE_URL", fake.base_url), ("OPENAI_API_KEY", "sk-test")):
            patch.setenv(name, value)
            patch.setattr(settings, name, value, raising=False)
        yield fake


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.reset()
    return server


def remote(pass_at: float = 0.5) -> Judge:
    return Judge("openai", "openai/gpt-4o-mini", RUBRIC, pass_at, max_retries=0, timeout=30.0)


def test_the_model_s_tool_call_is_the_score(fake: FakeOpenAI) -> None:
    verdict = {"score": 0.7, "reason": "Right delay, no support page."}
    fake.script(Turn(calls=[Call(JUDGE_TOOL, verdict)], usage=(120, 15)))

    score = scored(remote(), Expected(output="Five days; see /support."), ASKED)

    assert (score.score, score.passed, score.reason) == (0.7, True, verdict["reason"])
    assert score.usage == {"input_tokens": 120, "output_tokens": 15, "total_tokens": 135}
    body = fake.bodies[-1]
    assert body["model"] == "gpt-4o-mini"
    assert body["tool_choice"] == {"type": "function", "function": {"name": JUDGE_TOOL}}
    assert [t["function"]["name"] for t in body["tools"]] == [JUDGE_TOOL]
    assert "Five days; see /support." in body["messages"][-1]["content"]


def test_a_score_under_pass_at_fails_and_one_out_of_range_is_clamped(fake: FakeOpenAI) -> None:
    fake.script(
        Turn(calls=[Call(JUDGE_TOOL, {"score": 0.4, "reason": "vague"})]),
        Turn(calls=[Call(JUDGE_TOOL, {"score": 7, "reason": "great"})]),
    )
    low = scored(remote(), Expected(), ASKED)
    assert low.score == 0.4
    assert not low.passed
    assert scored(remote(), Expected(), ASKED).score == 1.0


@pytest.mark.parametrize(
    "turn",
    [
        Turn(text=["I would give it 0.9."]),
        Turn(calls=[Call(JUDGE_TOOL, {"reason": "no score"})]),
        Turn(calls=[Call(JUDGE_TOOL, {"score": True, "reason": "a boolean"})]),
        Turn(calls=[Call(JUDGE_TOOL, "{not json")]),
    ],
)
def test_no_usable_score_fails_the_case(fake: FakeOpenAI, turn: Turn) -> None:
    fake.script(turn)
    score = scored(remote(), Expected(), ASKED)
    assert (score.score, score.passed) == (0.0, False)
    assert score.reason == "the judge's model gave no score"


def test_a_provider_error_fails_the_case_with_its_reason(fake: FakeOpenAI) -> None:
    fake.script(Fail(500, "the model is down"))
    score = scored(remote(), Expected(), ASKED)
    assert not score.passed
    assert score.reason.startswith("the judge's model failed: ")
    assert "the model is down" in score.reason


# ---------------------------------------------------------------- options


def test_options_default_pass_at_and_bound_the_rubric() -> None:
    options = parse(JudgeOptions, {"model": "m", "rubric": "r"})
    assert options.pass_at == 0.5
    for bad, at in (
        ({"model": "m", "rubric": ""}, "rubric"),
        ({"model": "m", "rubric": "r", "passAt": 2}, "passAt"),
        ({"rubric": "r"}, "model"),
    ):
        with pytest.raises(Invalid) as caught:
            parse(JudgeOptions, bad)
        assert caught.value.errors[0].loc == (at,)
