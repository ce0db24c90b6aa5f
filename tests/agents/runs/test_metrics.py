"""What a run's end adds to /metrics (agents.runs.metrics, counted by the run recorder): runs by
agent, protocol and status, the run and model-call histograms, tokens and cost by model,
guardrail blocks; read back by scraping /metrics and parsing it as Prometheus does."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import override_settings
from rest_framework.test import APIClient

from agentbuilder.db import in_db
from agents.examples import CALCULATOR
from agents.llm.base import Message
from agents.models import Agent, LLMModel, Run
from agents.runs.record import RunRecorder
from guardrails.models import Guardrail
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Fail, Turn
from tests.invocations import invocation_start
from tests.support.backends import openai_server  # noqa: F401 (fixture)
from tests.support.guardrails import ATTACK, ask
from tests.support.metrics import Scrape, gained, headers, parsed
from tests.support.native import invoke

MODEL = "openai/gpt-4o-mini"  # the catalog's model the fake OpenAI server answers for
RUNS = "agentbuilder_runs_total"


@pytest.fixture
def scrape(settings: Any) -> Callable[[], Scrape]:
    settings.METRICS_TOKEN = token = secrets.token_urlsafe(32)

    def scraped() -> Scrape:
        response = APIClient().get("/metrics", headers=headers(token))
        assert response.status_code == 200
        return parsed(response.content.decode())

    return scraped


@pytest.fixture
def model(openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:  # noqa: F811
    openai_server.reset()
    with override_settings(LLM_OFFLINE=False):
        yield openai_server
    openai_server.reset()


def unique(name: str) -> str:
    # Every process of the suite counts into one directory: a name of this test's own.
    return f"{name}-{uuid.uuid4().hex[:8]}"


def model_of_its_own(**prices: Decimal) -> str:
    """A catalog model of this test's own, served as MODEL is (by the fake OpenAI server)."""
    row = LLMModel.objects.get(pk=MODEL)
    row.pk = unique(MODEL)
    for field, price in prices.items():
        setattr(row, field, price)
    row.save(force_insert=True)
    return row.pk


def guardrail_of_its_own(name: str) -> str:
    row = Guardrail.objects.get(name=name, environment=None)
    row.pk, row.name = None, unique(name)
    row.save()
    return row.name


def calculator(make_agent: Callable[..., Agent], **config: Any) -> Agent:
    return make_agent(unique("Calc"), "tool", config={**CALCULATOR["config"], **config})


def test_runs_are_counted_by_agent_protocol_and_status(
    scrape: Callable[[], Scrape], make_agent: Callable[..., Agent], owner_client: APIClient
) -> None:
    agent = calculator(make_agent)
    version = f"/v1/agents/{agent.pk}/versions/latest"
    before = scrape()

    assert invoke(owner_client, agent, "invoke", ask("What is 3x5?")).status == 200
    assert invoke(owner_client, agent, "invoke-stream", ask("What is 3x5?")).status == 200
    by_name = {"model": agent.name, **ask("What is 3x5?")}
    assert owner_client.post("/v1/chat/completions", by_name, format="json").status_code == 200
    assert owner_client.post(f"{version}/respond", ask("3x5?"), format="json").status_code == 200

    after = scrape()
    counted = {
        (protocol, status): gained(
            before, after, RUNS, agent=agent.name, protocol=protocol, status=status
        )
        for protocol in ("native", "chat.completions", "respond")
        for status in ("completed", "failed")
    }
    assert counted == {
        ("native", "completed"): 2,
        ("chat.completions", "completed"): 1,
        ("respond", "completed"): 1,
        ("native", "failed"): 0,
        ("chat.completions", "failed"): 0,
        ("respond", "failed"): 0,
    }


def test_a_failed_and_a_canceled_run_are_counted_with_their_status(
    scrape: Callable[[], Scrape],
    make_agent: Callable[..., Agent],
    owner_client: APIClient,
    owner: Any,
    env: Any,
    model: FakeOpenAI,
) -> None:
    llm = model_of_its_own()
    agent = calculator(make_agent, llmModelId=llm)
    model.script(Fail(400, "no such thing"))
    before = scrape()

    failed = invoke(owner_client, agent, "invoke", ask("What is 3x5?"))
    invocation = invocation_start(
        user=owner,
        environment=env,
        agent_id=agent.pk,
        version_ref="latest",
        protocol="native",
        route="invoke",
        agent_types=("tool",),
        messages=(Message("user", "What is 3x5?"),),
    )

    async def left() -> None:  # the client went away before the first event
        await in_db(RunRecorder(invocation).save)(canceled=True)

    async_to_sync(left)()  # in_db's thread is this one, in the test's transaction

    after = scrape()
    assert Run.objects.get(pk=failed.run_id).status == "failed"
    assert Run.objects.get(pk=invocation.run_id).status == "canceled"
    labels = {"agent": agent.name, "protocol": "native"}
    assert gained(before, after, RUNS, **labels, status="failed") == 1
    assert gained(before, after, RUNS, **labels, status="canceled") == 1
    assert gained(before, after, RUNS, **labels, status="completed") == 0
    # The failed call is a model call of its own status.
    calls = "agentbuilder_model_call_duration_seconds_count"
    assert gained(before, after, calls, model=llm, status="failed") == 1


def test_latency_histograms_tokens_and_cost_by_model(
    scrape: Callable[[], Scrape],
    make_agent: Callable[..., Agent],
    owner_client: APIClient,
    model: FakeOpenAI,
) -> None:
    llm = model_of_its_own(input_usd_per_mtok=Decimal("2"), output_usd_per_mtok=Decimal("10"))
    agent = calculator(make_agent, llmModelId=llm)
    model.script(Turn(text=["15."], usage=(1200, 30)))
    before = scrape()

    answer = invoke(owner_client, agent, "invoke", ask("What is 3x5?"))

    after = scrape()
    assert answer.status == 200
    run = Run.objects.get(pk=answer.run_id)
    assert gained(before, after, "agentbuilder_tokens_total", model=llm, type="input") == 1200
    assert gained(before, after, "agentbuilder_tokens_total", model=llm, type="output") == 30
    cost = gained(before, after, "agentbuilder_cost_usd_total", agent=agent.name, model=llm)
    assert run.cost_usd is not None
    assert cost == pytest.approx(float(run.cost_usd)) == pytest.approx((1200 * 2 + 30 * 10) / 1e6)

    runs = after.buckets("agentbuilder_run_duration_seconds", agent=agent.name, protocol="native")
    assert list(runs)[-1] == float("inf")
    assert list(runs.values()) == sorted(runs.values())  # cumulative
    assert (
        runs[float("inf")]
        == 1
        == after.value(
            "agentbuilder_run_duration_seconds_count", agent=agent.name, protocol="native"
        )
    )
    seconds = after.value(
        "agentbuilder_run_duration_seconds_sum", agent=agent.name, protocol="native"
    )
    assert seconds > 0
    assert min(le for le, n in runs.items() if n == 1) >= seconds  # its bucket holds it

    calls = after.buckets("agentbuilder_model_call_duration_seconds", model=llm, status="completed")
    assert list(calls) == [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, float("inf")]
    assert calls[float("inf")] == 1


def test_a_guardrail_block_is_counted_by_guardrail_stage_and_action(
    scrape: Callable[[], Scrape], make_agent: Callable[..., Agent], owner_client: APIClient
) -> None:
    guardrail = guardrail_of_its_own("HAIP-Prompt_attack-Medium")
    agent = calculator(make_agent, guardrails=[guardrail])
    before = scrape()

    answer = invoke(owner_client, agent, "invoke", ask(ATTACK))
    invoke(owner_client, agent, "invoke", ask("What is 3x5?"))

    after = scrape()
    assert answer.body["customOutputs"]["guardrail"]["action"] == "BLOCKED"
    blocks = {
        "guardrail": guardrail,
        "stage": "input",
        "action": "BLOCKED",
    }
    assert gained(before, after, "agentbuilder_guardrail_blocks_total", **blocks) == 1
    # Both runs completed (a block is an answer), one of them blocked.
    labels = {"agent": agent.name, "protocol": "native", "status": "completed"}
    assert gained(before, after, RUNS, **labels) == 2
