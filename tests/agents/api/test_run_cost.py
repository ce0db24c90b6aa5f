"""What a run cost (docs/api.md#cost), end to end: the usage each provider reports over its
real wire (cached input included), priced at the catalog's prices of the model that answered,
on each model call step and on the run, and the catalog's prices as `/v1/models` lists them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agents.examples import CALCULATOR
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import LLMModel, Run
from tests.fakes.server import Call, Turn
from tests.support.backends import Backend
from tests.support.native import fetch_run, invoke

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
INPUT, OUTPUT, CACHED = Decimal("2"), Decimal("10"), Decimal("0.5")  # USD per million tokens


def priced(model_id: str, cached: Decimal | None = CACHED) -> None:
    LLMModel.objects.filter(pk=model_id).update(
        input_usd_per_mtok=INPUT, output_usd_per_mtok=OUTPUT, cached_input_usd_per_mtok=cached
    )


def dollars(input_tokens: int, output_tokens: int, cached: int = 0) -> float:
    spent = (input_tokens - cached) * INPUT + cached * CACHED + output_tokens * OUTPUT
    return float(spent / 1_000_000)


def test_each_provider_reports_cached_input_and_the_run_is_priced_with_it(
    fake_backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    config = fake_backend.config(CALCULATOR["config"])
    model = fake_backend.model(config)
    priced(model)
    agent = make_agent("Calc", "tool", config=config)
    fake_backend.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5})], usage=(1200, 30), cached=1000),
        Turn(text=["15."], usage=(1250, 4)),
    )

    answer = invoke(owner_client, agent, "invoke", ASK)

    assert answer.status == 200
    run = fetch_run(owner_client, answer)
    first, _tool, last = run["steps"]
    assert first["tokensUsage"] == {
        "input_tokens": 1200,
        "output_tokens": 30,
        "total_tokens": 1230,
        "cached_input_tokens": 1000,
    }
    assert first["costUsd"] == pytest.approx(dollars(1200, 30, cached=1000))
    assert last["costUsd"] == pytest.approx(dollars(1250, 4))
    assert run["tokensUsage"]["cached_input_tokens"] == 1000
    assert run["costUsd"] == pytest.approx(dollars(1200, 30, 1000) + dollars(1250, 4))
    row = Run.objects.get(pk=answer.run_id)
    assert row.models_usage == {
        model: {
            "input_tokens": 2450,
            "output_tokens": 34,
            "cached_input_tokens": 1000,
            "cost_usd": pytest.approx(run["costUsd"]),
        }
    }


def test_cache_reads_cost_the_input_price_where_the_model_has_no_cached_price(
    fake_backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    config = fake_backend.config(CALCULATOR["config"])
    priced(fake_backend.model(config), cached=None)
    agent = make_agent("Calc", "tool", config=config)
    fake_backend.script(Turn(text=["Hi."], usage=(100, 10), cached=80))

    run = fetch_run(owner_client, invoke(owner_client, agent, "invoke", ASK))

    assert run["costUsd"] == pytest.approx(dollars(100, 10))


def test_a_model_without_a_price_leaves_the_runs_cost_unknown(
    backend: Backend, make_agent: Any, owner_client: Any
) -> None:
    config = backend.config(CALCULATOR["config"])
    LLMModel.objects.filter(pk=backend.model(config)).update(
        input_usd_per_mtok=None, output_usd_per_mtok=None
    )
    agent = make_agent("Calc", "tool", config=config)
    backend.script(Turn(text=["Hi."]))

    run = fetch_run(owner_client, invoke(owner_client, agent, "invoke", ASK))

    assert run["status"] == "completed"
    assert run["costUsd"] is None
    assert all(s["costUsd"] is None for s in run["steps"] if s["type"] == "model_call")


def test_the_offline_model_is_priced_as_itself_whatever_the_config_names(
    make_agent: Any, owner_client: Any
) -> None:
    # Under LLM_OFFLINE the offline model answers for a Bedrock id: its price applies.
    priced(LOCAL_MODEL)
    config = dict(CALCULATOR["config"], llmModelId="anthropic.claude-3-haiku-20240307-v1:0")
    LLMModel.objects.filter(pk=config["llmModelId"]).update(
        input_usd_per_mtok=Decimal(900), output_usd_per_mtok=Decimal(900)
    )
    agent = make_agent("Calc", "tool", config=config)

    run = fetch_run(owner_client, invoke(owner_client, agent, "invoke", ASK))

    usage = run["tokensUsage"]
    assert usage["input_tokens"] > 0
    assert run["costUsd"] == pytest.approx(dollars(usage["input_tokens"], usage["output_tokens"]))
    assert {s["model"] for s in run["steps"] if s["type"] == "model_call"} == {LOCAL_MODEL}


def test_the_catalog_lists_each_models_prices_and_when_they_were_taken(owner_client: Any) -> None:
    models = {m["id"]: m for m in owner_client.get("/v1/models").json()["models"]}

    mini = models["openai/gpt-4o-mini"]
    assert mini["inputPricePerMTok"] > 0
    assert mini["outputPricePerMTok"] > mini["inputPricePerMTok"]
    assert 0 < mini["cachedInputPricePerMTok"] < mini["inputPricePerMTok"]
    assert mini["pricesAsOf"]
    haiku = models["anthropic.claude-3-haiku-20240307-v1:0"]
    assert haiku["cachedInputPricePerMTok"] is None  # billed as other input
    assert models[LOCAL_MODEL]["inputPricePerMTok"] == 0
