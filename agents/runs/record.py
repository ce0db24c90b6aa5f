"""Recording a run: its events followed in memory, the run record written once, at the end."""

from __future__ import annotations

import json
from typing import Any

from django.db.models.expressions import RawSQL
from django.utils import timezone

from agents.models import Run, RunStatus
from agents.runs import leases
from agents.runs.start import Invocation
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed
from agents.runtime.trace import Trace
from agents.runtime.transcript import Transcript

LATENCY_SINCE_START = "GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (%s - started_at)) * 1000))::int"


class RunRecorder:
    """Follows a run's events in memory; `save` writes the run record once, at the end."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.transcript = Transcript()
        self.status = RunStatus.IN_PROGRESS
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        self.output: Any = None
        self.error: dict[str, str] | None = None
        self.trace = Trace()  # the runtime adds the run's steps to it
        leases.run_started(invocation.run_id)

    def observe(self, event: Event) -> None:
        self.transcript.observe(event)
        if isinstance(event, ResponseCompleted):
            self.transcript.close_text()
            self.status = RunStatus.COMPLETED
            self.usage = event.usage.as_dict()
            self.output = event.structured if event.structured is not None else event.text
            if event.custom_outputs:
                self.output = {"answer": self.output, "customOutputs": event.custom_outputs}
        elif isinstance(event, ResponseFailed):
            self.transcript.close_text()
            self.status = RunStatus.FAILED
            self.usage = event.usage.as_dict()
            self.error = {"code": event.code, "message": event.message}

    def broke(
        self, code: str = "internal_error", message: str = "the run failed unexpectedly"
    ) -> ResponseFailed:
        """The run broke where nothing expected it to: its failure, observed (unless it had
        ended already), for the client's stream to end with."""
        event = ResponseFailed(code, message)
        if self.status == RunStatus.IN_PROGRESS:
            self.observe(event)
        return event

    def save(self, *, canceled: bool = False) -> None:
        """Write the run's end. Whatever this process believed before (a sweep that took
        it for dead, an admin's verdict), the run's own end is the truth."""
        if canceled and self.status == RunStatus.IN_PROGRESS:
            self.status = RunStatus.CANCELED
            self.transcript.close_text()
        elif self.status == RunStatus.IN_PROGRESS:  # ended without a final event
            self.broke()
        try:
            # One statement: the turn's messages are appended to what the row holds and
            # the latency is counted from its start, both by the database.
            now = timezone.now()
            appended = json.dumps(self.transcript.messages, ensure_ascii=False)
            Run.objects.filter(pk=self.invocation.run_id).update(
                status=self.status,
                completed_at=now,
                latency_ms=RawSQL(LATENCY_SINCE_START, (now,)),  # noqa: S611 - constant SQL
                tokens_usage=self.usage,
                messages=RawSQL("messages || %s::jsonb", (appended,)),
                output=self.output,
                error=self.error,
                steps=self.trace.steps,
                lease_until=None,
            )
        finally:
            # Written or not: a run this process failed to write is left to its lease.
            leases.run_ended(self.invocation.run_id)
