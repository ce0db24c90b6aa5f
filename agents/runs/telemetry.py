"""A recorded run's spans (agents.telemetry.spans): what its invocation and its recorder know
of it, handed over once its end is written."""

from __future__ import annotations

import logging
import time

from agents.runs.record import RunRecorder
from agents.runs.start import Invocation
from agents.runtime.spec import AgentSpec
from agents.telemetry.spans import RunFacts, enabled, export_run

logger = logging.getLogger(__name__)


def run_exported(invocation: Invocation, recorder: RunRecorder) -> None:
    """Export the run's spans if export is on; a failure to is logged, never the run's."""
    if not enabled():
        return
    try:
        export_run(_facts(invocation, recorder), recorder.trace.started)
    except Exception:
        logger.exception("run %s: its spans could not be exported", invocation.run_id)


def _facts(invocation: Invocation, recorder: RunRecorder) -> RunFacts:
    spec = invocation.spec
    ended = recorder.started_ns + (time.monotonic_ns() - recorder.started_monotonic_ns)
    error = recorder.error or {}
    run_input = invocation.run_input
    return RunFacts(
        trace=invocation.trace,
        agent_name=invocation.agent_name,
        agent_id=spec.agent_id,
        version=invocation.version_number,
        provider=spec.provider_name,
        model=spec.model,
        run_id=str(invocation.run_id),
        response_id=invocation.response_id,
        thread_id=invocation.thread_id,
        environment=invocation.environment,
        started_ns=recorder.started_ns,
        ended_ns=ended,
        status=str(recorder.status),
        usage=recorder.usage,
        error_code=error.get("code"),
        error_message=error.get("message"),
        providers=_providers(spec),
        datastores=frozenset(name for name in run_input.retrievers if name),
        messages=run_input.messages,
        answer=recorder.answer,
        draft=invocation.draft,
    )


def _providers(spec: AgentSpec) -> dict[str, str]:
    """The provider of each model the run may call, its task agents' included."""
    found = {spec.model: spec.provider_name}
    found |= {f.model: f.provider_name for f in spec.fallbacks}
    for task in spec.task_agents.values():
        found = _providers(task) | found
    return found
