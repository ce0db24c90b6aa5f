"""A run's spend gate (agents.runtime.spec.SpendGate): the gates of what applies to it, its
budgets (agents.budgets.gate) and its caller's tokensPerMinute (agents.access.rate_limits),
seen by the runtime as one."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agents.llm.base import Usage
from agents.runtime.spec import SpendGate

logger = logging.getLogger(__name__)


def spend_gate(gates: Sequence[SpendGate | None]) -> SpendGate | None:
    """None when nothing applies: such a run pays nothing for a gate."""
    present = tuple(g for g in gates if g is not None)
    if len(present) <= 1:
        return present[0] if present else None
    return Gates(present)


class Gates:
    def __init__(self, gates: tuple[SpendGate, ...]) -> None:
        self.gates = gates

    async def before_call(self) -> None:
        for gate in self.gates:
            await gate.before_call()

    async def after_call(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        for gate in self.gates:
            await gate.after_call(model, usage, cost_usd)

    def settle(self) -> None:
        for gate in self.gates:
            gate.settle()


def settle(gate: SpendGate | None, run_id: object) -> None:
    """Charge what the run's gate still keeps, in the hop that writes its end. A counter
    that is down costs the caller its charge, never the run its end."""
    if gate is None:
        return
    try:
        gate.settle()
    except Exception:
        logger.exception("run %s: its spend could not be charged", run_id)
