"""Deciding the tool calls a run waits on (docs/api.md#tool-approvals): who may, once each,
and the decision that answers the last one resumes the run (agents.runs.approvals)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from django.db import transaction
from django.utils import timezone

from agentbuilder import liveness
from agentbuilder.errors import Conflict, ErrorItem, Invalid
from agentbuilder.users import User
from agents.models import ApprovalRequest, ApprovalStatus, Environment, Run, RunStatus
from agents.runs import detached
from agents.runs.approvals import invocation_resumed, run_decide
from agents.runs.leases import runs_close
from agents.runs.start import Invocation
from agents.runtime.approvals import Decision
from agents.runtime.failures import FailureCode
from agents.selectors.runs import run_check_decider

CALLER_GONE = {
    "code": FailureCode.INVALID_REQUEST.value,
    "message": "the run's caller was deleted while it waited for approvals",
}


@dataclass(frozen=True)
class DecisionIn:
    approval_request_id: uuid.UUID
    decision: Literal["approve", "reject"]
    message: str = ""


def run_resume_detached(invocation: Invocation) -> None:
    """Go on with a resumed run in this process's runner (agents.runs.detached), for a
    decision whose maker does not wait for the answer (the admin's inbox, a `background`
    body): the run is claimed by this process already, so it runs here."""
    detached.runner().submit(invocation.run_id, lambda: invocation)


@dataclass(frozen=True)
class StillWaiting:
    """Decided in part: the run waits for these requests still."""

    run_id: uuid.UUID
    pending: tuple[uuid.UUID, ...]


def approvals_decide(
    *, user: User, environment: Environment, run_id: uuid.UUID, decisions: list[DecisionIn]
) -> Invocation | StillWaiting:
    """Record `user`'s decisions on the run's approval requests. Once none is pending, the
    run resumes here: its invocation, claimed by this process, for the caller to answer
    as invoke does. Raises NotFound / PermissionDenied (who may decide,
    `run_check_decider`), Invalid for a request of no such id in this run (at its path in
    the body), Conflict for a request decided already or a run that waits no more (expired,
    canceled); two deciders at once: one wins, the other gets the Conflict."""
    mine = [(d.approval_request_id, d.decision == "approve", d.message) for d in decisions]
    decided = run_decide(run_id=run_id, user=user, environment=environment, decisions=mine)
    if decided is not None:
        if decided.pending:
            return StillWaiting(run_id, decided.pending)
        return _resumed(decided.run, environment, decided.decisions)
    run_check_decider(user=user, environment=environment, run_id=run_id)
    return _refused_or_decided(user, environment, run_id, decisions)


def _refused_or_decided(
    user: User, environment: Environment, run_id: uuid.UUID, decisions: list[DecisionIn]
) -> Invocation | StillWaiting:
    """The statement of `run_decide` did nothing: say why, request by request (or, should
    the run have come to wait meanwhile, decide here as it would have)."""
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("caller").get(pk=run_id)
        asked = {a.pk: a for a in ApprovalRequest.objects.filter(run_id=run_id)}
        errors = [
            ErrorItem(
                ("body", "decisions", i, "approvalRequestId"),
                f"run '{run_id}' has no approval request '{d.approval_request_id}'",
            )
            for i, d in enumerate(decisions)
            if d.approval_request_id not in asked
        ]
        if errors:
            raise Invalid(errors)
        if run.status != RunStatus.AWAITING_APPROVAL:
            raise Conflict(_no_longer_waiting(run))
        for d in decisions:
            request = asked[d.approval_request_id]
            if request.status != ApprovalStatus.PENDING:
                raise Conflict(
                    f"Approval request '{request.pk}' was decided already ({request.status})."
                )
            request.status = (
                ApprovalStatus.APPROVED if d.decision == "approve" else ApprovalStatus.REJECTED
            )
            request.decided_by, request.decided_at, request.message = user, now, d.message
            request.save(update_fields=["status", "decided_by", "decided_at", "message"])
        pending = tuple(a.pk for a in asked.values() if a.status == ApprovalStatus.PENDING)
        if pending:
            return StillWaiting(run.pk, pending)
        # The last decision: the run is this process's to go on with, from now.
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.IN_PROGRESS, lease_until=liveness.lease_expiry(), paused=None
        )
    run.status = RunStatus.IN_PROGRESS
    made = tuple(
        Decision(
            str(a.pk),
            a.status == ApprovalStatus.APPROVED,
            a.message,
            a.decided_by.get_username() if a.decided_by is not None else "",
            a.decided_at.isoformat().replace("+00:00", "Z") if a.decided_at else "",
        )
        for a in asked.values()
    )
    return _resumed(run, environment, made)


def approvals_decide_by_id(
    *,
    user: User,
    environment: Environment,
    decisions: list[tuple[tuple[str | int, ...], DecisionIn]],
) -> Invocation | StillWaiting:
    """`approvals_decide` for a protocol whose decisions name their requests only (process,
    A2A): the run is theirs. Each decision comes with the path of its id in the body, where
    an id of no request, or of another run than the first's, is refused (Invalid)."""
    ids = [decision.approval_request_id for _, decision in decisions]
    runs = dict(ApprovalRequest.objects.filter(pk__in=ids).values_list("pk", "run_id"))
    errors = []
    run_id = runs.get(ids[0])
    seen: set[uuid.UUID] = set()
    for at, decision in decisions:
        found = runs.get(decision.approval_request_id)
        if decision.approval_request_id in seen:
            errors.append(ErrorItem(at, "this request is decided twice in the body"))
        seen.add(decision.approval_request_id)
        if found is None:
            errors.append(ErrorItem(at, f"no approval request '{decision.approval_request_id}'"))
        elif found != run_id:
            errors.append(ErrorItem(at, "the decisions of one request are of one run"))
    if errors or run_id is None:
        raise Invalid(errors)
    return approvals_decide(
        user=user,
        environment=environment,
        run_id=run_id,
        decisions=[decision for _, decision in decisions],
    )


def _resumed(run: Run, environment: Environment, decisions: tuple[Decision, ...]) -> Invocation:
    caller = run.caller
    invocation = None
    if caller is not None:
        invocation = invocation_resumed(run, caller, environment, decisions)
    else:  # its caller was deleted while it waited: nobody to run it as
        runs_close(Run.objects.filter(pk=run.pk), RunStatus.FAILED, CALLER_GONE)
    if invocation is None:
        raise Conflict(_no_longer_waiting(Run.objects.get(pk=run.pk)))
    return invocation


def _no_longer_waiting(run: Run) -> str:
    error = run.error or {}
    if error.get("code") == FailureCode.APPROVAL_EXPIRED:
        return f"Run '{run.pk}' waited past its approvalTtl: its approvals expired."
    return f"Run '{run.pk}' does not wait for approvals ({run.status})."
