"""Budgets on the run path (agents/budgets/gate.py), on the offline model (its tokens are its
words): a run over a spent blocking budget is refused before it opens (402 with the budget,
each protocol in its own error; no run left behind); a run that spends its budget stops
before its next model call, `failed` / `budget_exceeded`; a `warn` budget never stops
anything; each call's tokens and priced cost are charged to every budget that applies to the
run, and to no other."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action
from agents.budgets.gate import Seen, budget_check, charge
from agents.budgets.limits import Spent
from agents.budgets.periods import period_start
from agents.budgets.selectors import budget_limits, budgets_now
from agents.budgets.services import BudgetFields, budget_create
from agents.examples import CALCULATOR
from agents.llm.base import Usage
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Agent, Budget, Environment, LLMModel, Run
from agents.runtime.spec import RunFailure
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.native import read_stream

pytestmark = pytest.mark.django_db

ASK = [{"role": "user", "content": "What is 3 times 5?"}]


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def budget(
    user: Any,
    environment: Environment,
    *,
    scope: str = "environment",
    target: Any = None,
    action: str = "block",
    usd: str | None = None,
    tokens: int | None = None,
    spent_tokens: int = 0,
) -> Budget:
    """A budget made through the service, with `spent_tokens` already charged this period."""
    made = budget_create(
        user=user,
        environment=environment,
        fields=BudgetFields(
            scope=scope,
            target=None if target is None else str(target),
            period="day",
            limit_usd=None if usd is None else Decimal(usd),
            limit_tokens=tokens,
            action=action,
        ),
    )
    if spent_tokens:
        charge([budget_limits(made)], Decimal(0), spent_tokens)
    return made


def spent(made: Budget) -> tuple[Decimal, int]:
    found = budgets_now([made])[0].spent
    return found.usd, found.tokens


def invoke(client: APIClient, agent: Agent, **extra: Any) -> Any:
    path = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    return client.post(path, {"messages": ASK, **extra}, format="json")


def total_tokens(run: Run) -> int:
    return int(run.tokens_usage["input_tokens"] + run.tokens_usage["output_tokens"])


# ---------------------------------------------------------------- refused before the run


def test_a_run_over_a_spent_blocking_budget_is_402_with_the_budget_and_no_run(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    made = budget(owner, env, tokens=10, spent_tokens=10)

    answer = invoke(owner_client, calculator)

    assert answer.status_code == 402, answer.json()
    refusal = answer.json()
    assert set(refusal) == {"detail", "budget"}
    assert "10 of 10 tokens" in refusal["detail"]
    assert refusal["budget"]["id"] == str(made.pk)
    assert refusal["budget"]["scope"] == {"environment": str(env.pk)}
    assert (refusal["budget"]["spentTokens"], refusal["budget"]["limitTokens"]) == (10, 10)
    assert refusal["budget"]["period"] == "day"
    assert not Run.objects.exists()
    assert "X-Run-Id" not in answer


def test_a_background_run_is_refused_before_it_is_queued(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    budget(owner, env, scope="agent", target=calculator.pk, usd="0.5", tokens=5, spent_tokens=6)

    answer = invoke(owner_client, calculator, background=True)

    assert answer.status_code == 402
    assert answer.json()["budget"]["scope"] == {"agent": str(calculator.pk)}
    assert not Run.objects.exists()


def test_chat_completions_refuses_a_spent_budget_as_openai_does(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    budget(owner, env, scope="user", target=owner.pk, tokens=3, spent_tokens=3)

    answer = owner_client.post(
        "/v1/chat/completions", {"model": "Calculator", "messages": ASK}, format="json"
    )

    assert answer.status_code == 402
    error = answer.json()["error"]
    assert (error["type"], error["code"]) == ("insufficient_quota", "budget_exceeded")
    assert "3 of 3 tokens" in error["message"]
    assert not Run.objects.exists()


def test_a2a_refuses_a_spent_budget_with_a_json_rpc_error_that_carries_it(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    made = budget(owner, env, tokens=3, spent_tokens=4)
    message = {"kind": "message", "messageId": "m-1", "role": "user"}
    params = {"message": {**message, "parts": [{"kind": "text", "text": "What is 3 times 5?"}]}}

    answer = owner_client.post(
        "/v1/a2a/Calculator",
        {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": params},
        format="json",
    )

    assert answer.status_code == 200  # JSON-RPC's transport rule
    error = answer.json()["error"]
    assert error["code"] == -32600
    assert error["data"]["code"] == "budget_exceeded"
    assert error["data"]["budget"]["id"] == str(made.pk)
    assert not Run.objects.exists()


def test_budgets_of_other_scopes_do_not_apply(
    owner_client: APIClient,
    owner: Any,
    env: Environment,
    other_env: Environment,
    calculator: Agent,
    make_agent: Any,
    admin_user: Any,
) -> None:
    other_agent = make_agent("other")
    someone = UserFactory(username="someone")
    elsewhere = api_client_create(name="bot", environment=env).client
    spent_out = [
        budget(owner, env, scope="agent", target=other_agent.pk, tokens=1, spent_tokens=1),
        budget(owner, env, scope="user", target=someone.pk, tokens=1, spent_tokens=1),
        budget(owner, env, scope="apiClient", target=elsewhere.pk, tokens=1, spent_tokens=1),
        budget(admin_user, other_env, tokens=1, spent_tokens=1),
    ]

    answer = invoke(owner_client, calculator)

    assert answer.status_code == 200, answer.json()
    assert [spent(b)[1] for b in spent_out] == [1, 1, 1, 1]  # nothing charged to them


def test_an_api_clients_budget_holds_its_calls_and_no_one_elses(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    issued = api_client_create(name="bot", environment=env, actions=[Action.READ, Action.INVOKE])
    budget(owner, env, scope="apiClient", target=issued.client.pk, tokens=2, spent_tokens=2)

    assert invoke(client_for(issued.client.service_user), calculator).status_code == 402
    assert invoke(owner_client, calculator).status_code == 200


# ---------------------------------------------------------------- between model calls


def test_a_run_that_spends_its_budget_stops_before_its_next_model_call(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    made = budget(owner, env, scope="agent", target=calculator.pk, tokens=1)

    answer = invoke(owner_client, calculator)

    assert answer.status_code == 402, answer.json()  # a failed run's status (not a refusal)
    assert answer.json()["detail"].startswith("budget_exceeded: ")
    run = Run.objects.get()
    assert run.status == "failed"
    assert run.error["code"] == "budget_exceeded"
    kinds = [step["type"] for step in run.steps]
    assert kinds.count("model_call") == 1  # the tool call's model call; not the answer's
    assert "tool_call" in kinds
    assert spent(made)[1] == total_tokens(run)
    assert invoke(owner_client, calculator).status_code == 402  # and no run opens now
    assert Run.objects.count() == 1


def test_the_stream_of_a_run_that_spends_its_budget_ends_failed(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    budget(owner, env, tokens=1)
    path = f"/v1/agents/{calculator.pk}/versions/latest/invoke-stream"

    lines = read_stream(owner_client.post(path, {"messages": ASK}, format="json"))

    assert lines[-1]["type"] == "response.failed"
    assert lines[-1]["response"]["error"]["code"] == "budget_exceeded"


def test_a_warn_budget_never_stops_a_run(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    made = budget(owner, env, action="warn", tokens=1, spent_tokens=50)

    answer = invoke(owner_client, calculator)

    assert answer.status_code == 200, answer.json()
    run = Run.objects.get()
    assert run.status == "completed"
    assert spent(made)[1] == 50 + total_tokens(run)


def test_priced_calls_charge_their_cost_and_unpriced_ones_their_tokens(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    LLMModel.objects.filter(pk=LOCAL_MODEL).update(
        input_usd_per_mtok=None, output_usd_per_mtok=None, cached_input_usd_per_mtok=None
    )
    made = budget(owner, env, usd="100", tokens=10**6)
    invoke(owner_client, calculator)
    unpriced = Run.objects.get()
    assert unpriced.cost_usd is None
    assert spent(made) == (Decimal(0), total_tokens(unpriced))

    LLMModel.objects.filter(pk=LOCAL_MODEL).update(
        input_usd_per_mtok=Decimal(3), output_usd_per_mtok=Decimal(15)
    )
    invoke(owner_client, calculator)

    priced = Run.objects.exclude(pk=unpriced.pk).get()
    assert priced.cost_usd is not None
    assert priced.cost_usd > 0
    usd, tokens = spent(made)
    assert usd == priced.cost_usd
    assert tokens == total_tokens(unpriced) + total_tokens(priced)


def test_a_usd_budget_stops_a_priced_run(
    owner_client: APIClient, owner: Any, env: Environment, calculator: Agent
) -> None:
    LLMModel.objects.filter(pk=LOCAL_MODEL).update(
        input_usd_per_mtok=Decimal(1000), output_usd_per_mtok=Decimal(1000)
    )
    budget(owner, env, usd="0.000001")

    assert invoke(owner_client, calculator).json()["detail"].startswith("budget_exceeded")
    assert Run.objects.get().error["code"] == "budget_exceeded"


def test_charging_a_budget_deleted_during_the_run_charges_the_others(
    owner: Any, env: Environment
) -> None:
    gone = budget(owner, env, tokens=100)
    kept = budget(owner, env, tokens=100, action="warn")
    limits = [budget_limits(gone), budget_limits(kept)]
    gone.delete()

    charge(limits, Decimal(0), 7)  # no error: the run goes on

    assert spent(kept)[1] == 7


def test_a_run_no_budget_applies_to_has_no_gate(
    owner: Any, env: Environment, calculator: Agent, make_agent: Any
) -> None:
    budget(owner, env, scope="agent", target=make_agent("other").pk, tokens=5)

    assert budget_check(environment_id=env.pk, agent_id=calculator.pk, user_id=owner.pk) is None


def test_the_gate_stops_on_the_total_it_last_saw_and_a_new_period_starts_afresh(
    owner: Any, env: Environment, calculator: Agent
) -> None:
    made = budget(owner, env, tokens=10)
    gate = budget_check(environment_id=env.pk, agent_id=calculator.pk, user_id=owner.pk)
    assert gate is not None
    async_to_sync(gate.before_call)()  # 0 of 10

    async_to_sync(gate.after_call)("m", Usage(6, 4), None)  # its charge answers 10 of 10
    with pytest.raises(RunFailure) as stopped:
        async_to_sync(gate.before_call)()
    assert stopped.value.code == "budget_exceeded"
    assert spent(made) == (Decimal(0), 10)

    yesterday = period_start("day") - timedelta(days=1)
    gate.seen[made.pk] = Seen(yesterday, Spent(tokens=10))
    async_to_sync(gate.before_call)()  # yesterday's total does not stop today's calls
