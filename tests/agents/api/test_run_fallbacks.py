"""Fallback models end to end (docs/api.md#fallback-models): the real boto3 and the real
`openai` SDK against the fake Bedrock and OpenAI servers, each attempt a model_call step of
the run, the run and the step naming the model that answered."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.test import override_settings

from agents.examples import CALCULATOR
from agents.models import Agent, LLMModel, Run
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Fail, Turn
from tests.support.native import DELTA, FAILED, fetch_run, invoke, no_run_in_progress

HAIKU, NOVA, MINI = (
    "anthropic.claude-3-haiku-20240307-v1:0",
    "amazon.nova-micro-v1:0",
    "openai/gpt-4o-mini",
)
ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
# One retry, so that each model's own retries are seen to happen before another is tried;
# the OpenAI fakes' failures say to retry in 10 ms, botocore's backoff is shrunk.
INFERENCE = {"maxTokens": 4000, "maxRetries": 1, "timeout": 5}


@pytest.fixture
def fakes(bedrock_server: FakeBedrock, openai_server: FakeOpenAI) -> Iterator[None]:
    bedrock_server.reset()
    openai_server.reset()
    with override_settings(LLM_OFFLINE=False):
        yield
    bedrock_server.reset()
    openai_server.reset()


def agent_on(make_agent: Any, model: str, *fallbacks: str) -> Agent:
    config = dict(
        CALCULATOR["config"],
        llmModelId=model,
        fallbackModels=list(fallbacks),
        inferenceConfig=INFERENCE,
    )
    return make_agent("Calculator", "tool", config=config)


def model_calls(run: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["model"], s["status"]) for s in run["steps"] if s["type"] == "model_call"]


def test_a_throttled_bedrock_model_falls_back_to_openai_which_answers(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    LLMModel.objects.filter(pk=MINI).update(
        input_usd_per_mtok=Decimal(2), output_usd_per_mtok=Decimal(10)
    )
    agent = agent_on(make_agent, HAIKU, MINI)
    bedrock_server.fail_model(HAIKU, Fail(429, "Too many requests, please wait"))
    openai_server.script(Turn(text=["3x5 is ", "15."], usage=(1000, 100)))

    answer = invoke(owner_client, agent, "invoke", ASK)

    assert answer.status == 200, answer.body
    assert answer.text == "3x5 is 15."
    run = fetch_run(owner_client, answer)
    assert run["status"] == "completed"
    assert run["model"] == MINI
    failed, answered = (s for s in run["steps"] if s["type"] == "model_call")
    assert (failed["model"], failed["status"]) == (HAIKU, "failed")
    assert "ThrottlingException: Too many requests, please wait" in failed["error"]
    assert "2 attempts" in failed["error"]  # Bedrock's own retry came first
    assert (answered["model"], answered["status"]) == (MINI, "completed")
    assert "error" not in answered
    assert answered["tokensUsage"]["total_tokens"] == 1100
    assert answered["costUsd"] == pytest.approx(0.003)  # at the fallback's prices
    assert run["costUsd"] == pytest.approx(0.003)
    assert list(Run.objects.get(pk=answer.run_id).models_usage) == [MINI]
    assert bedrock_server.model_ids() == [HAIKU, HAIKU]
    assert [body["model"] for body in openai_server.bodies] == ["gpt-4o-mini"]
    # The fallback is asked exactly what the failed model was.
    assert openai_server.bodies[0]["messages"][-1] == ASK["messages"][0]


def test_an_openai_model_down_falls_back_to_bedrock_and_the_stream_is_bedrocks(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = agent_on(make_agent, MINI, NOVA, HAIKU)
    openai_server.fail_model("gpt-4o-mini", Fail(503, "Overloaded", retry_after_ms=10))
    bedrock_server.fail_model(NOVA, Fail(500, "Internal failure"))
    bedrock_server.script(Turn(text=["Fifteen", "."]))

    answer = invoke(owner_client, agent, "invoke-stream", ASK)

    assert [line["delta"] for line in answer.lines if line["type"] == DELTA] == ["Fifteen", "."]
    run = fetch_run(owner_client, answer)
    assert run["status"] == "completed"
    assert run["model"] == HAIKU
    assert model_calls(run) == [(MINI, "failed"), (NOVA, "failed"), (HAIKU, "completed")]
    errors = [s.get("error", "") for s in run["steps"]]
    assert "HTTP 503" in errors[0]
    assert "Overloaded" in errors[0]
    assert "InternalServerException" in errors[1]
    assert len(openai_server.requests) == 2
    assert bedrock_server.model_ids() == [NOVA, NOVA, HAIKU]


def test_a_request_the_model_refuses_as_invalid_is_not_sent_to_another(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = agent_on(make_agent, HAIKU, MINI)
    bedrock_server.fail_model(HAIKU, Fail(400, "Malformed input request"))
    openai_server.script(Turn(text=["never"]))

    answer = invoke(owner_client, agent, "invoke", ASK)

    assert answer.status == 502
    run = fetch_run(owner_client, answer)
    assert run["status"] == "failed"
    assert run["error"]["code"] == "provider_error"
    assert "ValidationException: Malformed input request" in run["error"]["message"]
    assert model_calls(run) == [(HAIKU, "failed")]
    assert run["model"] is None
    assert openai_server.requests == []
    assert len(bedrock_server.requests) == 1  # not retried either


def test_when_every_model_fails_the_run_fails_with_the_last_error_and_every_attempt(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = agent_on(make_agent, HAIKU, MINI, NOVA)
    bedrock_server.fail_model(HAIKU, Fail(500, "Internal failure"))
    openai_server.fail_model("gpt-4o-mini", Fail(429, "Rate limit reached", retry_after_ms=10))
    bedrock_server.fail_model(NOVA, Fail(503, "Service unavailable"))

    answer = invoke(owner_client, agent, "invoke", ASK)

    assert answer.status == 502
    run = fetch_run(owner_client, answer)
    assert run["status"] == "failed"
    assert run["error"]["code"] == "provider_error"
    assert "ServiceUnavailableException: Service unavailable" in run["error"]["message"]
    assert model_calls(run) == [(HAIKU, "failed"), (MINI, "failed"), (NOVA, "failed")]
    steps = [s for s in run["steps"] if s["type"] == "model_call"]
    assert "InternalServerException" in steps[0]["error"]
    assert "HTTP 429" in steps[1]["error"]
    assert steps[2]["error"] == run["error"]["message"]
    assert run["model"] is None
    assert run["costUsd"] == 0
    assert Run.objects.get(pk=answer.run_id).models_usage == {}
    no_run_in_progress()


def test_once_text_was_streamed_a_failure_ends_the_run_without_a_fallback(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    agent = agent_on(make_agent, HAIKU, MINI)
    bedrock_server.script(Turn(text=["Partial ", "answer ", "more"], error_after=2))
    openai_server.script(Turn(text=["never"]))

    answer = invoke(owner_client, agent, "invoke-stream", ASK)

    assert answer.text == "Partial "
    assert answer.lines[-1]["type"] == FAILED
    run = fetch_run(owner_client, answer)
    assert run["status"] == "failed"
    assert model_calls(run) == [(HAIKU, "failed")]
    assert openai_server.requests == []


def test_a_fallback_model_that_cannot_read_what_was_sent_is_skipped(
    fakes: None,
    bedrock_server: FakeBedrock,
    openai_server: FakeOpenAI,
    make_agent: Any,
    owner_client: Any,
) -> None:
    # Nova Micro reads text only; GPT-4o mini reads images.
    agent = agent_on(make_agent, HAIKU, NOVA, MINI)
    bedrock_server.fail_model(HAIKU, Fail(503, "Service unavailable"))
    openai_server.script(Turn(text=["A small picture."]))
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(60))).decode()
    image = {"type": "image", "source": {"type": "base64", "mediaType": "image/png", "data": png}}
    content = [{"type": "text", "text": "What do you see?"}, image]

    answer = invoke(
        owner_client, agent, "invoke", {"messages": [{"role": "user", "content": content}]}
    )

    assert answer.status == 200, answer.body
    run = fetch_run(owner_client, answer)
    assert model_calls(run) == [(HAIKU, "failed"), (MINI, "completed")]
    assert NOVA not in bedrock_server.model_ids()
    [sent] = [
        part
        for part in openai_server.bodies[0]["messages"][-1]["content"]
        if part["type"] == "image_url"
    ]
    assert sent["image_url"]["url"] == f"data:image/png;base64,{png}"
