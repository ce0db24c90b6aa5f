"""A budget as the run path holds it, and how far its scope has spent it: plain values, read
by one statement at a run's start and compared again before each model call."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from agents.budgets.periods import period_end

WARN_AT = (80, 100)  # percent of a limit: `budget.warning` once each per period


@dataclass(frozen=True)
class Spent:
    usd: Decimal = Decimal(0)
    tokens: int = 0


@dataclass(frozen=True)
class BudgetLimits:
    """A budget that applies to a run (agents.models.Budget, without the ORM)."""

    id: uuid.UUID
    environment_id: uuid.UUID
    scope: str
    target: str | None  # its object's id; None for the environment itself
    period: str
    limit_usd: Decimal | None
    limit_tokens: int | None
    action: str

    @property
    def blocks(self) -> bool:
        return self.action == "block"

    def used(self, spent: Spent) -> float:
        """The share of the budget spent: of whichever limit is nearer (1.0 = all of it)."""
        shares = [0.0]
        if self.limit_usd:
            shares.append(float(spent.usd / self.limit_usd))
        if self.limit_tokens:
            shares.append(spent.tokens / self.limit_tokens)
        return max(shares)

    def spent_out(self, spent: Spent) -> bool:
        return self.used(spent) >= 1.0

    def scope_json(self) -> dict[str, str | int]:
        """`{"agent": id}` as the API takes it: a user's id is a number, the others uuids."""
        if self.target is None:
            return {self.scope: str(self.environment_id)}
        return {self.scope: int(self.target) if self.scope == "user" else self.target}

    def as_json(self, spent: Spent, start: date) -> dict[str, Any]:
        """The budget and its period's spend, as the 402 body and `budget.warning` say them
        (docs/api.md#budgets)."""
        return {
            "id": str(self.id),
            "scope": self.scope_json(),
            "period": self.period,
            "action": self.action,
            "limitUsd": None if self.limit_usd is None else float(self.limit_usd),
            "limitTokens": self.limit_tokens,
            "periodStart": start.isoformat(),
            "periodEnd": period_end(self.period, start).isoformat(),
            "spentUsd": float(spent.usd),
            "spentTokens": spent.tokens,
        }

    def spent_message(self, spent: Spent) -> str:
        said = []
        if self.limit_usd is not None:
            said.append(f"{_usd(spent.usd)} of {_usd(self.limit_usd)} USD")
        if self.limit_tokens is not None:
            said.append(f"{spent.tokens} of {self.limit_tokens} tokens")
        return (
            f"The {self.scope} budget {self.id} of this {self.period} is spent ({', '.join(said)})."
        )


def _usd(amount: Decimal) -> str:
    return f"{amount:.4f}".rstrip("0").rstrip(".")
