"""An experiment's summary from its scored cases (docs/api.md#experiments): per scorer its
mean and pass rate, whole cases' pass rate, latency percentiles, tokens and cost. Pure: the
runner reads the rows and writes what this returns."""

from __future__ import annotations

import statistics
from decimal import Decimal
from typing import Any


def summary_of(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Per scorer its mean and pass rate over the cases it applied to; the pass rate of
    whole cases; latency percentiles; the runs' tokens and cost summed (cost None when no
    case's is known), and apart the tokens judges spent scoring them."""
    per: dict[str, list[tuple[float, bool]]] = {}
    latencies, costs = [], []
    tokens = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    judged = dict.fromkeys(tokens, 0)  # what scorers spent themselves (a judge's model)
    decided, passed, errors = 0, 0, 0
    for scores, case_passed, latency, usage, cost, error in rows:
        for name, s in (scores or {}).items():
            per.setdefault(name, []).append((float(s["score"]), bool(s["passed"])))
            for key, count in (s.get("usage") or {}).items():
                if key in judged:
                    judged[key] += int(count)
        if case_passed is not None:
            decided += 1
            passed += bool(case_passed)
        if latency is not None:
            latencies.append(latency)
        if cost is not None:
            costs.append(Decimal(cost))
        for key in tokens:
            tokens[key] += int((usage or {}).get(key, 0))
        errors += error is not None
    return {
        "scorers": {
            name: {
                "mean": round(sum(v for v, _ in values) / len(values), 4),
                "passRate": round(sum(p for _, p in values) / len(values), 4),
                "cases": len(values),
            }
            for name, values in per.items()
        },
        "passRate": round(passed / decided, 4) if decided else None,
        "latencyMs": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
        "tokensUsage": tokens,
        "judgeTokensUsage": judged,
        "costUsd": float(sum(costs)) if costs else None,
        "cases": len(rows),
        "errors": errors,
    }


def _percentile(values: list[int], p: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    # The "inclusive" method: a percentile within the values seen, as dashboards draw it.
    return round(statistics.quantiles(values, n=100, method="inclusive")[p - 1], 1)
