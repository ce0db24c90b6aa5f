"""Budgets under concurrent runs (docs/architecture.md#budgets): 50 runs at once against a
budget that fits 10, on the deployed ASGI app (agentbuilder.asgi) served by uvicorn, each
run's model the fake OpenAI server. The counter loses no charge, and the runs together
overshoot the budget by at most one model call of each run in flight when it was crossed.

Counted, not timed: in the first test every run's one model call is held at the fake until
all 50 are in flight (the worst case: each passed the gate before any was charged); in the
second, runs of many calls each go freely and the test counts the calls."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest
from django.test import override_settings

from agents.access.tokens import token_encode
from agents.budgets.selectors import budgets_now
from agents.budgets.services import BudgetFields, budget_create
from agents.models import Agent, Budget, Environment, Run
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.live import live_app

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

RUNS = 50
FITS = 10  # runs the budget holds
USAGE = (100, 30)  # the fake's tokens for every call: one call a run
CALL_TOKENS = sum(USAGE)
TASK = {
    "llmModelId": "openai/gpt-4o-mini",
    "systemPrompt": "Say ok to: {{ text }}",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "inferenceConfig": {"maxRetries": 0},
}
MAX_CALLS = 10  # a looping run's model calls (then max_iterations)
LOOPING = {
    "llmModelId": "openai/gpt-4o-mini",
    "tools": [
        {
            "toolType": "function",
            "name": "multiply",
            "description": "Multiplies two numbers",
            "funcName": "multiply",
        }
    ],
    "maxIterations": MAX_CALLS,
    "inferenceConfig": {"maxRetries": 0},
}
ARRIVALS = 6000  # polls of 10 ms for the held calls to reach the fake: a hung run fails it


@pytest.fixture
def model(openai_server: FakeOpenAI) -> Any:
    openai_server.reset()
    yield openai_server
    openai_server.reset()


def burst(
    port: int, agent: Agent, user: Any, runs: int = RUNS, task: bool = True
) -> list[httpx.Response]:
    """`runs` invocations of `agent` at once, each on its own connection."""
    token, _ = token_encode(user_id=user.pk, environment_id=None)
    route = "invoke-task" if task else "invoke"
    path = f"/v1/agents/{agent.pk}/versions/latest/{route}"
    body: dict[str, Any] = (
        {"inputs": {"text": "ok?"}}
        if task
        else {"messages": [{"role": "user", "content": "3 times 5?"}]}
    )

    async def all_at_once() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=runs)
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
            return list(
                await asyncio.gather(
                    *(
                        client.post(
                            path,
                            json=body,
                            headers={"Authorization": f"Bearer {token}"},
                        )
                        for _ in range(runs)
                    )
                )
            )

    return asyncio.run(all_at_once())


def fits_ten(owner: Any, env: Environment, agent: Agent, calls: int = 1) -> Budget:
    """A blocking budget on `agent` that holds FITS runs of `calls` model calls each."""
    return budget_create(
        user=owner,
        environment=env,
        fields=BudgetFields(
            scope="agent",
            target=str(agent.pk),
            period="day",
            limit_usd=None,
            limit_tokens=FITS * calls * CALL_TOKENS,
            action="block",
        ),
    )


def spent_tokens(budget: Budget) -> int:
    return budgets_now([budget])[0].spent.tokens


def test_fifty_runs_in_flight_at_once_overshoot_by_one_call_each_at_most(
    model: FakeOpenAI, make_agent: Any, owner: Any, env: Environment
) -> None:
    agent = make_agent("saying-ok", "task", config=TASK)
    budget = fits_ten(owner, env, agent)
    held = threading.Semaphore(0)
    model.fallback = Turn(text=["ok"], usage=USAGE, gate=held)

    with override_settings(LLM_OFFLINE=False), live_app(_asgi()) as served:
        answers: list[httpx.Response] = []
        runner = threading.Thread(target=lambda: answers.extend(burst(served.port, agent, owner)))
        runner.start()
        for _ in range(ARRIVALS):  # every run has passed the gate and is in its model call
            if len(model.requests) >= RUNS or not runner.is_alive():
                break
            time.sleep(0.01)
        in_flight = len(model.requests)
        held.release(RUNS * 10)  # more than every held event
        runner.join()
        after = burst(served.port, agent, owner, runs=1)

    assert in_flight == RUNS
    assert [a.status_code for a in answers] == [200] * RUNS  # all were in flight: all finish
    spent = spent_tokens(budget)
    overshoot = spent - FITS * CALL_TOKENS
    print(
        f"\nheld: {RUNS} in flight, spent {spent} tokens of {FITS * CALL_TOKENS}: "
        f"overshoot {overshoot} tokens = {overshoot // CALL_TOKENS} calls"
    )
    assert spent == RUNS * CALL_TOKENS  # every call charged, none lost
    assert overshoot <= in_flight * CALL_TOKENS  # one call per run in flight
    assert after[0].status_code == 402  # and now the budget refuses
    assert after[0].json()["budget"]["spentTokens"] == spent
    assert len(model.requests) == RUNS


def test_fifty_free_runs_of_many_calls_stop_within_one_call_each_of_the_budget(
    model: FakeOpenAI, make_agent: Any, owner: Any, env: Environment
) -> None:
    # Every model call asks for the tool again: a run would go on for MAX_CALLS calls. The
    # budget holds FITS such runs; 50 run at once, freely.
    agent = make_agent("multiplying", "tool", config=LOOPING)
    budget = fits_ten(owner, env, agent, calls=MAX_CALLS)
    model.fallback = Turn(calls=[Call("multiply", {"a": 3, "b": 5})], usage=USAGE)

    with override_settings(LLM_OFFLINE=False), live_app(_asgi()) as served:
        answers = burst(served.port, agent, owner, task=False)

    statuses = [a.status_code for a in answers]
    runs = Run.objects.filter(agent=agent)
    stopped = runs.filter(status="failed", error__code="budget_exceeded").count()
    calls = len(model.requests)
    spent = spent_tokens(budget)
    limit = FITS * MAX_CALLS * CALL_TOKENS
    overshoot = spent - limit
    print(
        f"\nfree: {stopped} runs stopped by the budget, {statuses.count(402) - stopped} refused "
        f"before opening, {RUNS - statuses.count(402)} ended otherwise; {calls} model calls "
        f"(without the budget: {RUNS * MAX_CALLS}); spent {spent} of {limit} tokens: overshoot "
        f"{overshoot} tokens = {overshoot // CALL_TOKENS} calls, bound {RUNS} calls"
    )
    assert spent == calls * CALL_TOKENS  # the counter lost no charge
    assert sum(r.tokens_usage.get("total_tokens", 0) for r in runs) == spent
    assert spent >= limit  # nothing stopped a run before the budget was spent
    assert stopped > 0
    assert statuses.count(402) == len(answers) - statuses.count(502)  # stopped or refused
    # A call starts only while the budget is not spent: past it, each run in flight had at
    # most its one call under way.
    assert overshoot <= RUNS * CALL_TOKENS


def _asgi() -> Any:
    # Imported here: the import connects the app's liveness start to this process.
    from agentbuilder.asgi import application

    return application
