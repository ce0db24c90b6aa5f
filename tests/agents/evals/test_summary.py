"""An experiment's summary (agents/evals/summary.py) from its scored cases' rows."""

from __future__ import annotations

from decimal import Decimal

from agents.evals.summary import summary_of


def row(scores: dict, passed: bool | None, latency: int | None, cost: str | None = None) -> tuple:
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    return (scores, passed, latency, usage, None if cost is None else Decimal(cost), None)


def test_a_scorer_counts_over_the_cases_it_applied_to_and_cases_over_their_scorers() -> None:
    judged = {"score": 0.5, "passed": True, "usage": {"total_tokens": 7}}
    rows = [
        row({"exact": {"score": 1, "passed": True}, "judge": judged}, True, 10, "0.001"),
        row({"exact": {"score": 0, "passed": False}}, False, 30),
        row({}, None, 20),  # no scorer applied: the case counts neither way
    ]

    summary = summary_of(rows)

    assert summary["scorers"]["exact"] == {"mean": 0.5, "passRate": 0.5, "cases": 2}
    assert summary["scorers"]["judge"] == {"mean": 0.5, "passRate": 1.0, "cases": 1}
    assert summary["passRate"] == 0.5
    assert summary["latencyMs"] == {"p50": 20.0, "p95": 29.0}
    assert summary["tokensUsage"] == {"input_tokens": 30, "output_tokens": 15, "total_tokens": 45}
    assert summary["judgeTokensUsage"]["total_tokens"] == 7
    assert summary["costUsd"] == 0.001  # the one case whose cost is known
    assert (summary["cases"], summary["errors"]) == (3, 0)


def test_nothing_scored_yet() -> None:
    summary = summary_of([])

    assert summary["passRate"] is None
    assert summary["latencyMs"] == {"p50": None, "p95": None}
    assert summary["costUsd"] is None
