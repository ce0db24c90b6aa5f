"""Runs with known tokens and costs, as the recorder would have written them, for the usage
report's tests (agents.selectors.usage, GET /v1/usage, the admin's usage page)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from agents.access.permissions import Action, grant
from agents.models import Agent, AgentVersion, Environment, Run, RunStatus
from agents.services.versions import version_add
from tests.factories import UserFactory

DAY1 = datetime(2026, 11, 10, 9, 30, tzinfo=UTC)
DAY2 = datetime(2026, 11, 11, 23, 59, tzinfo=UTC)
BEFORE = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)  # outside the period the tests ask
PERIOD = {"from": "2026-11-10", "to": "2026-11-11"}


def usage(inputs: int, outputs: int, cost: str | None, cached: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inputs,
        "output_tokens": outputs,
        "cached_input_tokens": cached,
        "cost_usd": None if cost is None else float(cost),
    }


def run_of(
    version: AgentVersion,
    caller: Any,
    started_at: datetime,
    by_model: dict[str, dict[str, Any]],
) -> Run:
    """A completed run whose model calls used `by_model` (models_usage), its tokens and cost
    their sums (None when a model had no price)."""
    costs = [u["cost_usd"] for u in by_model.values()]
    tokens = {
        key: sum(u[key] for u in by_model.values())
        for key in ("input_tokens", "output_tokens", "cached_input_tokens")
    }
    tokens["total_tokens"] = tokens["input_tokens"] + tokens["output_tokens"]
    run = Run.objects.create(
        agent=version.agent,
        version=version,
        caller=caller,
        protocol="native",
        status=RunStatus.COMPLETED,
        tokens_usage=tokens,
        cost_usd=None if None in costs else Decimal(str(round(sum(costs), 8))),
        models_usage=by_model,
    )
    Run.objects.filter(pk=run.pk).update(started_at=started_at)  # auto_now_add set it
    return run


@dataclass(frozen=True)
class Spend:
    """Two agents of the default environment and one of another; alice's and bob's runs.

    r1 alpha v1, alice, day 1: m1 100/50 $0.01
    r2 alpha v1, bob,   day 1: m1 200/100 (50 cached) $0.02
    r3 alpha v2, alice, day 2: m1 5/5 $0.002, m2 5/5 $0.003
    r4 beta v1,  alice, day 2: m3 30/30, no price
    r5 gamma (other environment), alice, day 2: m1 $1
    r6 alpha v1, alice, before the period: m1 $5
    """

    alpha: Agent
    beta: Agent
    gamma: Agent
    alpha_v1: AgentVersion
    alpha_v2: AgentVersion
    beta_v1: AgentVersion
    alice: Any
    bob: Any
    auditor: Any  # READ and AUDIT on alpha only
    runs: list[Run]


def spend(make_agent: Any, admin_user: Any, env: Environment, other: Environment) -> Spend:
    alpha, beta = make_agent("alpha"), make_agent("beta")
    gamma = make_agent("gamma", environment=other)
    alpha_v1, beta_v1 = alpha.versions.get(), beta.versions.get()
    alpha_v2 = version_add(user=admin_user, agent=alpha, config=None)
    alice: Any = UserFactory(username="alice")
    bob: Any = UserFactory(username="bob")
    auditor: Any = UserFactory(username="auditor")
    for user in (alice, bob):
        grant(user, Action.READ, env)
        grant(user, Action.INVOKE, env)
        grant(user, Action.INVOKE, other)
    grant(auditor, Action.READ, alpha)
    grant(auditor, Action.AUDIT, alpha)
    runs = [
        run_of(alpha_v1, alice, DAY1, {"m1": usage(100, 50, "0.01")}),
        run_of(alpha_v1, bob, DAY1, {"m1": usage(200, 100, "0.02", cached=50)}),
        run_of(alpha_v2, alice, DAY2, {"m1": usage(5, 5, "0.002"), "m2": usage(5, 5, "0.003")}),
        run_of(beta_v1, alice, DAY2, {"m3": usage(30, 30, None)}),
        run_of(gamma.versions.get(), alice, DAY2, {"m1": usage(1, 1, "1")}),
        run_of(alpha_v1, alice, BEFORE, {"m1": usage(1, 1, "5")}),
    ]
    return Spend(alpha, beta, gamma, alpha_v1, alpha_v2, beta_v1, alice, bob, auditor, runs)
