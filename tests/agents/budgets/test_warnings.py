"""`budget.warning` (agents/budgets/warnings.py): sent once at 80 % and once at 100 % of a
budget's period, whoever's charge crosses each, to the enabled webhooks that subscribe to it
in the budget's reach (the agent's for an agent budget, every agent's for the
environment's); signed and delivered as every webhook is."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.budgets.gate import charge
from agents.budgets.limits import Spent
from agents.budgets.periods import period_start
from agents.budgets.selectors import budget_limits
from agents.budgets.services import BudgetFields, budget_create
from agents.budgets.warnings import budget_warning_send
from agents.examples import CALCULATOR
from agents.models import Agent, Budget, BudgetSpend, Environment, Run, WebhookDelivery
from agents.webhooks.events import WebhookEvent
from agents.webhooks.services import agent_webhook_create
from tests.support.webhooks import Receiver, deliver_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

WARNING = WebhookEvent.BUDGET_WARNING


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def budget(user: Any, env: Environment, tokens: int, **more: Any) -> Budget:
    return budget_create(
        user=user,
        environment=env,
        fields=BudgetFields(
            scope=more.get("scope", "environment"),
            target=more.get("target"),
            period="day",
            limit_usd=None,
            limit_tokens=tokens,
            action=more.get("action", "warn"),
        ),
    )


def received(receiver: Receiver) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in receiver.received]


def test_a_warning_at_80_and_one_at_100_percent_each_sent_once(
    owner: Any, env: Environment, calculator: Agent, receiver: Receiver
) -> None:
    agent_webhook_create(user=owner, agent=calculator, url=receiver.url, events=[WARNING])
    made = budget(owner, env, 1000, scope="agent", target=str(calculator.pk))
    limits = [budget_limits(made)]

    charge(limits, Decimal(0), 790)  # 79 %: nothing yet
    assert not WebhookDelivery.objects.exists()
    charge(limits, Decimal(0), 60)  # 85 %
    charge(limits, Decimal(0), 60)  # 91 %: the 80 % warning was sent already
    charge(limits, Decimal(0), 100)  # 101 %
    charge(limits, Decimal(0), 500)  # 151 %
    deliver_all()

    bodies = sorted(received(receiver), key=lambda b: b["data"]["threshold"])  # sent at once
    assert [b["data"]["threshold"] for b in bodies] == [80, 100]
    assert {b["type"] for b in bodies} == {"budget.warning"}
    first, second = (b["data"]["budget"] for b in bodies)
    assert (first["spentTokens"], second["spentTokens"]) == (850, 1010)
    assert first["id"] == str(made.pk)
    assert first["scope"] == {"agent": str(calculator.pk)}
    spend = BudgetSpend.objects.get()
    assert spend.warned_80_at is not None
    assert spend.warned_100_at is not None


def test_a_warning_is_claimed_by_one_charge_only(owner: Any, env: Environment) -> None:
    made = budget(owner, env, 10)
    charge([budget_limits(made)], Decimal(0), 5)  # the period's row, under the thresholds
    spend = BudgetSpend.objects.get()
    args = {
        "limits": budget_limits(made),
        "spend_id": spend.pk,
        "start": period_start("day"),
        "spent": Spent(tokens=9),
        "threshold": 80,
    }

    assert budget_warning_send(**args) is True
    assert budget_warning_send(**args) is False


def test_a_run_that_crosses_a_warn_budget_warns_and_goes_on(
    owner_client: APIClient,
    owner: Any,
    env: Environment,
    calculator: Agent,
    make_agent: Any,
    receiver: Receiver,
) -> None:
    other = make_agent("other")
    agent_webhook_create(user=owner, agent=calculator, url=receiver.url, events=[WARNING])
    agent_webhook_create(user=owner, agent=other, url=receiver.url, events=[WARNING])
    agent_webhook_create(user=owner, agent=other, url=receiver.url)  # the run's ends only
    budget(owner, env, 1)  # the environment's: every agent's webhooks hear of it

    answer = owner_client.post(
        f"/v1/agents/{calculator.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 3 times 5?"}]},
        format="json",
    )
    deliver_all()

    assert answer.status_code == 200
    assert Run.objects.get().status == "completed"
    warnings = [b for b in received(receiver) if b["type"] == "budget.warning"]
    assert sorted(b["data"]["threshold"] for b in warnings) == [80, 80, 100, 100]  # two hooks
    owner_client.post(
        f"/v1/agents/{calculator.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 3 times 5?"}]},
        format="json",
    )
    deliver_all()
    assert WebhookDelivery.objects.filter(event="budget.warning").count() == 4  # no more
