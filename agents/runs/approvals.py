"""A run that waits for a person's approval, kept in the database, and resumed where it
stopped (docs/api.md#tool-approvals; the runtime's side is agents.runtime.approvals).

- **Pause.** A turn that ends with approval requests is recorded `awaiting_approval`
  (agents.runs.record): the row keeps its request and the paused turn (`paused`), its
  deadline is `lease_until` (the version's approvalTtl), and each request is an
  ApprovalRequest row. It holds no process: nothing renews it, and the lease sweep leaves
  it alone.
- **Resume.** The decision that answers the last pending request claims the run
  (`in_progress`, leased by the deciding process, agents.services.approvals); its
  invocation is built here from what the row kept, with the decisions, and runs through
  the one run path as any run: its events are added after the ones it had, its steps after
  its steps. The tools that ran before the pause do not run again: the turn kept their
  results.
- **Expiry.** The sweep ends a run whose deadline passed `canceled` / `approval_expired`.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from agentbuilder import liveness
from agentbuilder.db import columns_sql, one_row
from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User
from agents.access.permissions import Action, held_array
from agents.configs import ToolAgentConfig
from agents.llm.base import Usage
from agents.models import Agent, ApprovalRequest, ApprovalStatus, Environment, Run, RunStatus
from agents.runs.request import (
    kept_message_from_json,
    kept_message_json,
    request_from_json,
    request_json,
)
from agents.runs.start import Invocation, invocation_claimed
from agents.runtime.approvals import (
    DEFAULT_TTL_SECONDS,
    Decision,
    PausedTurn,
    Resume,
)
from agents.runtime.approvals import (
    ApprovalRequest as Asked,
)
from agents.runtime.failures import FailureCode
from agents.runtime.spec import AgentSpec

logger = logging.getLogger(__name__)

SWEEP = "approvals"


def register() -> None:
    """Every live process expires the waiting runs past their deadline in its sweeps; a
    waiting run is held by no process, so there is nothing to renew."""
    liveness.register(SWEEP, renew=lambda held: None, sweep=runs_expire_approvals)


EXPIRED = {
    "code": FailureCode.APPROVAL_EXPIRED.value,
    "message": "no decision on the tool calls it waited for came within approvalTtl",
}


def approval_ttl(spec: AgentSpec) -> timedelta:
    config = spec.config
    seconds = config.approval_ttl if isinstance(config, ToolAgentConfig) else None
    return timedelta(seconds=seconds or DEFAULT_TTL_SECONDS)


# ---------------------------------------------------------------- the paused turn as JSON


def paused_json(invocation: Invocation, turn: PausedTurn, events: int) -> dict[str, Any]:
    """What the run's row keeps while it waits: the request (agents.runs.request), the
    turn, whole, and how many events the run has stored (the resumed ones follow)."""
    assert invocation.request is not None, "a run that cannot pause paused"
    return {
        "request": request_json(invocation.request),
        "versionNumber": invocation.version_number,
        "events": events,
        "turn": {
            "messages": [kept_message_json(m) for m in turn.messages],
            "iteration": turn.iteration,
            "retries": turn.retries,
            "requests": [
                [r.approval_request_id, r.call_id, r.name, r.arguments] for r in turn.requests
            ],
            "usage": turn.usage.as_dict(),
            "modelCalls": turn.model_calls,
        },
    }


def turn_from_json(data: dict[str, Any]) -> PausedTurn:
    usage = data["usage"]
    return PausedTurn(
        messages=tuple(kept_message_from_json(m) for m in data["messages"]),
        iteration=data["iteration"],
        retries=data["retries"],
        requests=tuple(Asked(*r) for r in data["requests"]),
        usage=Usage(
            usage["input_tokens"], usage["output_tokens"], usage.get("cached_input_tokens", 0)
        ),
        model_calls=data["modelCalls"],
    )


def approval_rows_json(run_id: uuid.UUID, turn: PausedTurn) -> list[dict[str, Any]]:
    """The turn's requests as the pause's statement inserts them (agents.runs.record)."""
    return [
        {
            "id": r.approval_request_id,
            "run_id": str(run_id),
            "call_id": r.call_id,
            "tool": r.name,
            "arguments": r.arguments,
        }
        for r in turn.requests
    ]


@functools.cache
def approvals_insert_sql() -> str:
    """The INSERT of a pause's approval requests, `%(approvals)s` a JSON array."""
    quote = connection.ops.quote_name
    table = quote(ApprovalRequest._meta.db_table)
    column = {f.name: quote(str(f.column)) for f in ApprovalRequest._meta.concrete_fields}
    names = ("id", "run", "call_id", "tool", "arguments", "status", "created_at", "message")
    # Names from the model's metadata; every value is a parameter.
    return f"""
        INSERT INTO {table} ({", ".join(column[n] for n in names)})
        SELECT (a->>'id')::uuid, (a->>'run_id')::uuid, a->>'call_id', a->>'tool',
            a->>'arguments', %(pending)s, %(now)s, ''
        FROM jsonb_array_elements(%(approvals)s::jsonb) AS a
    """  # noqa: S608


# ---------------------------------------------------------------- resume


def invocation_resumed(
    run: Run, caller: User, environment: Environment, decisions: tuple[Decision, ...]
) -> Invocation | None:
    """The invocation that goes on with `run`, just claimed for this process (now
    `in_progress`, its `paused` read before the claim cleared it): its turn resumed with
    `decisions`. None when it cannot go on (its caller lost the right to run it, its
    version is gone): then the run is failed with the reason."""
    kept = run.paused
    assert kept is not None
    request = request_from_json(
        kept["request"],
        user=caller,
        environment=environment,
        agent_id=run.agent_id,
        version_ref=str(kept["versionNumber"]),
    )
    try:
        invocation = invocation_claimed(run, request)
    except (DomainError, Invalid) as exc:
        logger.info("run %s could not resume: %s", run.pk, exc)
        return None
    resume = Resume(turn_from_json(kept["turn"]), decisions)
    invocation.run_input = replace(invocation.run_input, messages=(), resume=resume)
    invocation.events_before = kept["events"]
    invocation.steps_before = list(run.steps)
    return invocation


# ---------------------------------------------------------------- closing a waiting run


def run_cancel_waiting(run_id: uuid.UUID) -> bool:
    """Close a run waiting for approvals `canceled` (its requests expire): nothing waits on
    a process. False if it is not waiting (resumed since, or ended)."""
    return bool(_close_waiting(Run.objects.filter(pk=run_id), RunStatus.CANCELED, None))


def runs_expire_approvals() -> int:
    """End every run whose approvals were not decided in time `canceled` /
    `approval_expired` (the lease sweep's part, in every live process)."""
    expired = Run.objects.filter(status=RunStatus.AWAITING_APPROVAL, lease_until__lt=Now())
    closed = _close_waiting(expired, RunStatus.CANCELED, EXPIRED)
    if closed:
        logger.info("%s run(s) waited past their approvalTtl: canceled (approval_expired)", closed)
    return closed


def _close_waiting(runs: Any, status: str, error: dict[str, str] | None) -> int:
    ids = list(runs.filter(status=RunStatus.AWAITING_APPROVAL).values_list("pk", flat=True)[:500])
    if not ids:
        return 0
    with transaction.atomic():
        closing = Run.objects.select_for_update().filter(
            pk__in=ids, status=RunStatus.AWAITING_APPROVAL
        )
        ids = list(closing.values_list("pk", flat=True))
        closed = Run.objects.filter(pk__in=ids).update(
            status=status, completed_at=Now(), error=error, lease_until=None, paused=None
        )
        pending = ApprovalRequest.objects.filter(run_id__in=ids, status=ApprovalStatus.PENDING)
        _expired_steps(list(pending.order_by("created_at")))
        pending.update(status=ApprovalStatus.EXPIRED)
    return closed


def _expired_steps(requests: list[ApprovalRequest]) -> None:
    """Each request that will never be decided, as a step of its run's timeline."""
    now = timezone.now().isoformat().replace("+00:00", "Z")
    by_run: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for asked in requests:
        by_run.setdefault(asked.run_id, []).append(
            {
                "type": "approval_decision",
                "startedAt": now,
                "approvalRequestId": str(asked.pk),
                "tool": asked.tool,
                "decision": "expired",
                "by": "",
                "decidedAt": now,
                "latencyMs": 0,
                "status": "completed",
            }
        )
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        for run_id, steps in by_run.items():
            cursor.execute(
                f"UPDATE {table} SET steps = steps || %s::jsonb WHERE id = %s",  # noqa: S608
                [json.dumps(steps), run_id],
            )


def deadline(invocation: Invocation, now: datetime) -> datetime:
    return now + approval_ttl(invocation.spec)


# ---------------------------------------------------------------- deciding, in one statement


@dataclass(frozen=True)
class Decided:
    """What one decision statement did: `run` (its `caller` read with it) is claimed by
    this process when `pending` is empty; `decisions` are all of its requests' (this
    body's and any decided before)."""

    run: Run
    decisions: tuple[Decision, ...]
    pending: tuple[uuid.UUID, ...]


def run_decide(
    *,
    run_id: uuid.UUID,
    user: User,
    environment: Environment,
    decisions: list[tuple[uuid.UUID, bool, str]],
) -> Decided | None:
    """Record `user`'s decisions (request id, approve, message) and, if they leave nothing
    pending, claim the run (`in_progress`, leased here), in one statement. None when it did
    nothing: the user may not decide the run's requests (`run_check_decider`'s rule), the
    run waits no more, or a decision names a request that is not a pending one of this
    run; the caller then finds out which (the slower way), since this statement either
    records every decision or none.

    The ORM's way (a locking read of the run with its caller, a read of its requests, an
    UPDATE per decision, the run's UPDATE, a count of its events) cost about 9 ms of the
    server's CPU a decision (py-spy, bench/approvals.py), a third of a whole run's start."""
    now = timezone.now()
    params = {
        "run": run_id,
        "user": user.pk,
        "environment": environment.pk,
        "superuser": user.is_superuser,
        "approve": Action.APPROVE.value,
        "usable": [Action.READ.value, Action.INVOKE.value],
        "now": now,
        "count": len(decisions),
        "decisions": json.dumps(
            [
                {
                    "id": str(request_id),
                    "status": ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED,
                    "message": message,
                }
                for request_id, approve, message in decisions
            ]
        ),
        "waiting": RunStatus.AWAITING_APPROVAL.value,
        "running": RunStatus.IN_PROGRESS.value,
        "pending": ApprovalStatus.PENDING.value,
        "lease": timedelta(seconds=liveness.lease_seconds()),
    }
    found = one_row(_decide_sql(), params, Run, ("u__", get_user_model()))
    if found is None:
        return None
    run, caller = found
    if not run.all_pending:
        return None
    run.caller = caller
    if isinstance(run.paused, str):  # psycopg hands jsonb to Django as text; this is no field
        run.paused = json.loads(run.paused)
    mine = {request_id: (approve, message) for request_id, approve, message in decisions}
    by, at = user.get_username(), now.isoformat().replace("+00:00", "Z")
    made, pending = [], []
    for request_id, status, message, decided_at, decider in json.loads(run.asked):
        request_id = uuid.UUID(request_id)
        if request_id in mine:
            approve, said = mine[request_id]
            made.append(Decision(str(request_id), approve, said, by, at))
        elif status == ApprovalStatus.PENDING:
            pending.append(request_id)
        else:
            approved = status == ApprovalStatus.APPROVED
            made.append(Decision(str(request_id), approved, message, decider or "", decided_at))
    if not pending:
        run.status = RunStatus.IN_PROGRESS
    return Decided(run, tuple(made), tuple(pending))


@functools.cache
def _decide_sql() -> str:
    quote = connection.ops.quote_name
    runs, asks = quote(Run._meta.db_table), quote(ApprovalRequest._meta.db_table)
    users, agents = quote(get_user_model()._meta.db_table), quote(Agent._meta.db_table)
    # Names from the models' metadata; every value is a parameter. Every part of a
    # statement sees the rows as they were before it: `rest` leaves out this body's
    # requests, and the list of requests read at the end shows them as they were.
    return f"""
        WITH target AS (
            SELECT r.id FROM {runs} r JOIN {agents} ag ON ag.id = r.agent_id
            WHERE r.id = %(run)s AND r.status = %(waiting)s
                AND ag.environment_id = %(environment)s AND ag.deleted_at IS NULL
                AND (%(superuser)s
                    OR %(approve)s = ANY({held_array("ag")})
                    OR (r.caller_id = %(user)s AND {held_array("ag")} && %(usable)s))
            FOR UPDATE OF r
        ), wanted AS (
            SELECT d.id, d.status, d.message
            FROM jsonb_to_recordset(%(decisions)s::jsonb) AS d(id uuid, status text, message text)
        ), ok AS (
            SELECT count(*) = %(count)s AS all_pending
            FROM {asks} a JOIN target t ON a.run_id = t.id JOIN wanted w ON w.id = a.id
            WHERE a.status = %(pending)s
        ), decided AS (
            UPDATE {asks} a
            SET status = w.status, decided_by_id = %(user)s, decided_at = %(now)s,
                message = w.message
            FROM wanted w, ok
            WHERE a.id = w.id AND a.run_id = %(run)s AND ok.all_pending
            RETURNING a.id
        ), rest AS (
            SELECT count(*) AS n FROM {asks} a JOIN target t ON a.run_id = t.id
            WHERE a.status = %(pending)s AND a.id NOT IN (SELECT id FROM wanted)
        ), claimed AS (
            UPDATE {runs} r
            SET status = %(running)s, lease_until = STATEMENT_TIMESTAMP() + %(lease)s,
                paused = NULL
            FROM target t, ok, rest
            WHERE r.id = t.id AND ok.all_pending AND rest.n = 0
            RETURNING r.id
        )
        SELECT {columns_sql(Run, "r")}, ok.all_pending,
            (SELECT count(*) FROM decided) AS decided,
            (SELECT coalesce(json_agg(json_build_array(
                a.id, a.status, a.message, a.decided_at, du.username) ORDER BY a.created_at), '[]')
             FROM {asks} a LEFT JOIN {users} du ON du.id = a.decided_by_id
             WHERE a.run_id = r.id)::text AS asked,
            {columns_sql(get_user_model(), "u", "u__")}
        FROM target t JOIN {runs} r ON r.id = t.id CROSS JOIN ok
        LEFT JOIN {users} u ON u.id = r.caller_id
    """  # noqa: S608
