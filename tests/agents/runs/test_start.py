"""A run's start says whether its client reads the answer as it is made (RunRequest.stream):
a call nobody streams asks its model for whole answers (docs/architecture.md#non-streamed-calls),
through the real boto3 and the real `openai` SDK against the fakes, and its run reads the same
as a streamed one's."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agents.examples import CALCULATOR
from agents.models import LLMModel
from tests.fakes.server import Call, Turn
from tests.support.backends import (  # noqa: F401 (fixtures)
    MODELS,
    Backend,
    bedrock_server,
    fake_backend,
    openai_server,
)
from tests.support.native import fetch_run, invoke

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}


def _streamed_upstream(backend: Backend) -> list[bool]:
    """Whether each request the fake got asked for a stream."""
    assert backend.fake is not None
    if backend.name == "bedrock":
        return [r.path.endswith("/converse-stream") for r in backend.fake.requests]
    return [r.body["stream"] for r in backend.fake.requests]


def _answered(backend: Backend, client: Any, agent: Any, route: str, **body: Any) -> Any:
    backend.fake.reset()  # type: ignore[union-attr]
    backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}, id="call_m")], usage=(900, 20), cached=800),
        Turn(text=["3x5 ", "is ", "15."], usage=(950, 10), cached=900),
    )
    answer = invoke(client, agent, route, {**ASK, **body})
    assert answer.status == 200, answer.body
    assert answer.final_text == "3x5 is 15."
    assert [(c["name"], c["arguments"]) for c in answer.calls] == [("multiply", {"a": 3, "b": 5})]
    return answer


def _model_calls(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's model_call steps, but for their times."""
    steps = [dict(s) for s in run["steps"] if s["type"] == "model_call"]
    for step in steps:
        # Unstreamed, the time to the first token is the time to the whole answer.
        assert step.pop("timeToFirstTokenMs") <= step.pop("latencyMs")
        del step["startedAt"]
    return steps


def test_a_call_nobody_streams_asks_for_whole_answers_and_reads_the_same(
    fake_backend: Backend,  # noqa: F811
    make_agent: Any,
    owner_client: Any,
) -> None:
    model = MODELS[fake_backend.name]
    LLMModel.objects.filter(pk=model).update(
        input_usd_per_mtok=Decimal(3), output_usd_per_mtok=Decimal(15)
    )
    LLMModel.objects.filter(pk=model).update(cached_input_usd_per_mtok=Decimal("0.3"))
    agent = make_agent("Calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))

    whole = _answered(fake_backend, owner_client, agent, "invoke")
    assert _streamed_upstream(fake_backend) == [False, False]
    streamed = _answered(fake_backend, owner_client, agent, "invoke-stream")
    assert _streamed_upstream(fake_backend) == [True, True]

    runs = [fetch_run(owner_client, answer) for answer in (whole, streamed)]
    assert runs[0]["tokensUsage"] == runs[1]["tokensUsage"]
    assert runs[0]["tokensUsage"]["cached_input_tokens"] == 1700
    assert runs[0]["costUsd"] == runs[1]["costUsd"] is not None
    assert _model_calls(runs[0]) == _model_calls(runs[1])


def test_an_output_guardrail_keeps_the_calls_streamed(
    fake_backend: Backend,  # noqa: F811
    make_agent: Any,
    owner_client: Any,
) -> None:
    # It screens the text in windows as it comes, and its block stops the model there.
    agent = make_agent("Calculator", "tool", config=fake_backend.config(CALCULATOR["config"]))

    _answered(fake_backend, owner_client, agent, "invoke", guardrails=["HAIP-Profanity"])

    assert _streamed_upstream(fake_backend) == [True, True]
