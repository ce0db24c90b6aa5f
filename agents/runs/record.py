"""Recording a run: its events followed in memory and kept (agents.runs.event_log), the run
record written once, at the end, with its last events in the same statement."""

from __future__ import annotations

import functools
import json
import time
from typing import Any

from django.db import connection
from django.utils import timezone

from agents.models import ApprovalStatus, Run, RunStatus
from agents.runs import leases
from agents.runs.approvals import approval_rows_json, approvals_insert_sql, deadline, paused_json
from agents.runs.event_log import EventLog, insert_sql
from agents.runs.metrics import run_counted
from agents.runs.spending import settle
from agents.runs.start import Invocation
from agents.runtime.approvals import PausedTurn
from agents.runtime.events import Event, ResponseCompleted, ResponseFailed
from agents.runtime.failures import FailureCode
from agents.runtime.pricing import steps_cost
from agents.runtime.trace import Trace
from agents.runtime.transcript import Transcript


def _json(value: Any) -> str | None:
    # None stays SQL NULL, as the model's JSONFields store it.
    return None if value is None else json.dumps(value, ensure_ascii=False)


@functools.cache
def _end_sql() -> str:
    """The run's end in one statement written once: its events not stored yet, the turn's
    messages appended to what the row holds, the latency counted from its start, all by
    the database (one transaction: a follower that sees the end sees every event)."""
    column = {f.name: connection.ops.quote_name(str(f.column)) for f in Run._meta.concrete_fields}
    # Table and column names from the model's metadata; every value is a parameter.
    return f"""
        WITH kept AS ({insert_sql()})
        UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET
            {column["status"]} = %(status)s,
            {column["completed_at"]} = %(now)s,
            {column["latency_ms"]} =
                GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (%(now)s - {column["started_at"]})) * 1000)),
            {column["tokens_usage"]} = %(usage)s::jsonb,
            {column["messages"]} = {column["messages"]} || %(messages)s::jsonb,
            {column["output"]} = %(output)s::jsonb,
            {column["error"]} = %(error)s::jsonb,
            {column["steps"]} = %(steps)s::jsonb,
            {column["cost_usd"]} = %(cost)s,
            {column["models_usage"]} = %(models_usage)s::jsonb,
            {column["lease_until"]} = NULL
        WHERE {column["id"]} = %(id)s
    """  # noqa: S608


@functools.cache
def _pause_sql() -> str:
    """A turn's end that waits for approvals (agents.runs.approvals), in one statement as
    `_end_sql`: the run `awaiting_approval` with what resumes it and its deadline, its
    approval requests inserted."""
    column = {f.name: connection.ops.quote_name(str(f.column)) for f in Run._meta.concrete_fields}
    return f"""
        WITH kept AS ({insert_sql()}), asked AS ({approvals_insert_sql()})
        UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET
            {column["status"]} = %(status)s,
            {column["latency_ms"]} =
                GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (%(now)s - {column["started_at"]})) * 1000)),
            {column["tokens_usage"]} = %(usage)s::jsonb,
            {column["messages"]} = {column["messages"]} || %(messages)s::jsonb,
            {column["steps"]} = %(steps)s::jsonb,
            {column["cost_usd"]} = %(cost)s,
            {column["models_usage"]} = %(models_usage)s::jsonb,
            {column["paused"]} = %(paused)s::jsonb,
            {column["lease_until"]} = %(deadline)s
        WHERE {column["id"]} = %(id)s
    """  # noqa: S608


class RunRecorder:
    """Follows a run's events in memory; `save` writes the run record once, at the end."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.transcript = Transcript()
        self.status = RunStatus.IN_PROGRESS
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        self.output: Any = None
        self.error: dict[str, str] | None = None
        self.trace = Trace(invocation.trace)  # the runtime adds the run's steps to it
        self.started_ns = invocation.started_ns
        self.started_monotonic_ns = invocation.started_monotonic_ns
        self.answer: str | None = None  # as the caller got it, for the run's spans
        self.events = EventLog(invocation.run_id, invocation.events_before)
        self.paused: PausedTurn | None = None  # the turn waits for approvals
        # This turn's start, on time.monotonic()'s clock (the row's started_at is the run's).
        self._started = invocation.started_monotonic_ns / 1e9
        leases.run_started(invocation.run_id)

    def observe(self, event: Event) -> None:
        self.events.add(event)
        self.transcript.observe(event)
        if isinstance(event, ResponseCompleted):
            self.transcript.close_text()
            self.status = RunStatus.COMPLETED
            if event.paused is not None:
                self.status, self.paused = RunStatus.AWAITING_APPROVAL, event.paused
            self.usage = event.usage.as_dict()
            self.answer = event.answer_text
            self.output = event.structured if event.structured is not None else event.text
            if event.client_calls:  # the turn waits for the client: its message is the output
                self.output = self.transcript.messages[-1]
            if event.custom_outputs:
                self.output = {"answer": self.output, "customOutputs": event.custom_outputs}
        elif isinstance(event, ResponseFailed):
            self.transcript.close_text()
            self.status = RunStatus.FAILED
            self.usage = event.usage.as_dict()
            self.error = {"code": event.code, "message": event.message}

    def broke(
        self,
        code: FailureCode = FailureCode.INTERNAL_ERROR,
        message: str = "the run failed unexpectedly",
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
        invocation = self.invocation
        try:
            now = timezone.now()
            turn = self.trace.records(len(invocation.steps_before))
            steps = invocation.steps_before + turn
            cost, by_model = steps_cost(steps)
            params = {
                "id": invocation.run_id,
                "status": self.status,
                "now": now,
                "usage": _json(self.usage),
                "messages": _json(self.transcript.messages),
                "output": _json(self.output),
                "error": _json(self.error),
                "steps": _json(steps),
                "cost": cost,
                "models_usage": _json(by_model),
                **self.events.final_params(),
            }
            statement = _end_sql()
            if self.status == RunStatus.AWAITING_APPROVAL and self.paused is not None:
                statement = _pause_sql()
                stored = self.events.written + len(self.events.pending)  # with this statement
                params |= {
                    "paused": _json(paused_json(invocation, self.paused, stored)),
                    "deadline": deadline(invocation, now),
                    "approvals": _json(approval_rows_json(invocation.run_id, self.paused)),
                    "pending": ApprovalStatus.PENDING.value,
                }
            with connection.cursor() as cursor:
                cursor.execute(statement, params)
            # What the run's last model call spent, charged in this hop, not one of its own.
            settle(invocation.run_input.spend, invocation.run_id)
            run_counted(
                agent=invocation.agent_name,
                protocol=invocation.protocol,
                status=self.status,
                seconds=time.monotonic() - self._started,
                steps=turn,
            )
        finally:
            # Written or not: a run this process failed to write is left to its lease.
            leases.run_ended(self.invocation.run_id)
