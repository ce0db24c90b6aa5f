"""What a run's end adds to the metrics at /metrics (agentbuilder.metrics): counted by the run
recorder (agents.runs.record) from the turn's status and steps, in whichever process ran it,
into that process's files (prometheus_client's multiprocess mode).

Labels stay bounded: agents, models and guardrails are the deployment's own, protocols,
statuses and stages closed sets; never a run, a user, a thread or free text."""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from prometheus_client import Counter, Histogram, values

from agentbuilder.metrics_dir import multiproc_dir

logger = logging.getLogger(__name__)

# Each process's files named by its host and pid, not its pid alone (the library's default):
# containers that share the directory (web and worker, or web scaled out) reuse pids, and
# two processes writing one file would spoil it. Set here, whatever mode the library chose
# when it was imported, so the counts never stay in this process's memory.
_HOST = socket.gethostname().replace("_", "-")  # the collector splits file names on "_"
values.ValueClass = values.MultiProcessValue(process_identifier=lambda: f"{_HOST}-{os.getpid()}")

# Runs take seconds to minutes (a tool loop, a slow model); a model call a few seconds.
RUN_BUCKETS = (0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, float("inf"))
MODEL_CALL_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, float("inf"))

RUNS = Counter(
    "agentbuilder_runs",
    "Runs ended, by agent, protocol and status (each turn of a run that waits for approvals "
    "ends once: awaiting_approval, then its outcome)",
    ["agent", "protocol", "status"],
)
RUN_SECONDS = Histogram(
    "agentbuilder_run_duration_seconds",
    "How long a run (each turn of one) took, from its start to its end",
    ["agent", "protocol"],
    buckets=RUN_BUCKETS,
)
MODEL_CALL_SECONDS = Histogram(
    "agentbuilder_model_call_duration_seconds",
    "How long a model call took, its stream to the end, by model and status (completed, "
    "failed, canceled)",
    ["model", "status"],
    buckets=MODEL_CALL_BUCKETS,
)
TOKENS = Counter(
    "agentbuilder_tokens",
    "Tokens the models' providers reported, by model and type (input, output)",
    ["model", "type"],
)
COST = Counter(
    "agentbuilder_cost_usd",
    "What model calls cost (US dollars, the catalog's prices; calls of unpriced models add "
    "nothing), by agent and model",
    ["agent", "model"],
)
GUARDRAIL_BLOCKS = Counter(
    "agentbuilder_guardrail_blocks",
    "Guardrail interventions (a blocked input or output, a dropped or replaced text), by "
    "guardrail, stage and action",
    ["guardrail", "stage", "action"],
)


def run_counted(
    *,
    agent: str,
    protocol: str,
    status: str,
    seconds: float,
    steps: Iterable[Mapping[str, Any]],
) -> None:
    """Count one run's end and the steps of its turn (as docs/api.md#run-steps lists them).
    Without METRICS_TOKEN nothing can read the counts: nothing is counted, nothing written."""
    if not settings.METRICS_TOKEN:
        return
    try:
        _counted(agent, protocol, status, seconds, steps)
    except Exception:
        # The run's end is written: a metric that cannot be counted (a full disk, a directory
        # this process may not write) is logged, never the run's failure.
        logger.exception("the metrics of a run's end could not be counted")


def _counted(
    agent: str, protocol: str, status: str, seconds: float, steps: Iterable[Mapping[str, Any]]
) -> None:
    _directory()
    RUNS.labels(agent, protocol, status).inc()
    RUN_SECONDS.labels(agent, protocol).observe(seconds)
    for step in steps:
        kind = step["type"]
        if kind == "model_call":
            _model_call_counted(agent, step)
        elif kind == "guardrail" and "name" in step:  # an intervention, not a check
            GUARDRAIL_BLOCKS.labels(step["name"], step["stage"], step["action"]).inc()


@functools.cache
def _directory() -> None:
    multiproc_dir()  # each labelled value opens its file there on first use


def _model_call_counted(agent: str, step: Mapping[str, Any]) -> None:
    model = step["model"]
    MODEL_CALL_SECONDS.labels(model, step["status"]).observe(step["latencyMs"] / 1000)
    usage = step.get("tokensUsage") or {}
    for kind in ("input", "output"):
        if tokens := usage.get(f"{kind}_tokens"):
            TOKENS.labels(model, kind).inc(tokens)
    if cost := step.get("costUsd"):
        COST.labels(agent, model).inc(cost)
