"""A run's spend gate (agents.runs.spending): its budgets and its caller's tokensPerMinute
seen as one, each model call charged before the next, the last with the run's end, and a
counter that is down never failing a run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.access.rate_limits import Limits, TokensCharged, caller_limits, spent
from agents.examples import CALCULATOR
from agents.llm.base import Usage
from agents.models import Budget, BudgetSpend, Environment, UserLimits
from agents.runs.spending import Gates, settle, spend_gate
from tests.support.native import fetch_run, invoke
from tests.support.processes import free_port

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}


def test_nothing_that_applies_makes_no_gate_and_one_gate_is_itself(db: Any) -> None:
    tokens = TokensCharged(Limits("user:1", "user", None, 100))

    assert spend_gate((None, None)) is None
    assert spend_gate((None, tokens)) is tokens
    assert isinstance(spend_gate((tokens, TokensCharged(tokens.limits))), Gates)


def test_tokens_are_kept_until_the_run_settles_and_charged_once(db: Any) -> None:
    limits = Limits("user:7", "user", None, 1000)
    gate = TokensCharged(limits)

    async def two_calls() -> None:
        await gate.before_call()
        await gate.after_call("m", Usage(30, 5), 0.1)
        await gate.before_call()
        await gate.after_call("m", Usage(10, 2, cached_input_tokens=8), None)

    asyncio.run(two_calls())
    assert spent(limits, "tokens") == 0  # nothing is charged while the run goes on

    gate.settle()  # the recorder's, in the hop that writes the run's end
    gate.settle()  # a second has nothing left to charge
    assert spent(limits, "tokens") == 47


def test_a_runs_calls_are_charged_to_its_budgets_and_its_callers_minute(
    owner: Any, owner_client: Any, make_agent: Any, env: Environment
) -> None:
    UserLimits.objects.create(user=owner, tokens_per_minute=1_000_000)
    budget = Budget.objects.create(
        environment=env, scope="environment", period="day", limit_tokens=10**9, action="block"
    )
    agent = make_agent("Calc", "tool", config=CALCULATOR["config"])

    answer = invoke(owner_client, agent, "invoke", ASK)

    assert answer.status == 200
    run = fetch_run(owner_client, answer)
    calls = [s for s in run["steps"] if s["type"] == "model_call"]
    assert len(calls) == 2  # one charged before the second call, one with the run's end
    total = run["tokensUsage"]["input_tokens"] + run["tokensUsage"]["output_tokens"]
    assert BudgetSpend.objects.get(budget=budget).spent_tokens == total
    limits = caller_limits(owner)
    assert limits is not None
    assert spent(limits, "tokens") == total


def test_a_counter_that_is_down_costs_the_charge_never_the_runs_end(
    db: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.RATE_LIMITS_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens
    gate = TokensCharged(Limits("user:9", "user", None, 1000))
    asyncio.run(gate.after_call("m", Usage(30, 5), None))

    settle(gate, "run-9")  # what the recorder calls with the run's end: it must not raise

    assert "run run-9: its spend could not be charged" in caplog.text
