"""Reads of the tool calls that wait for a decision (docs/api.md#tool-approvals)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agentbuilder.users import User
from agents.access.permissions import Action, may
from agents.models import Agent, ApprovalRequest, ApprovalStatus, RunStatus


def approvals_pending(*, user: User) -> QuerySet[ApprovalRequest]:
    """The requests `user` may decide, across agents and environments, newest first: of
    its own runs of agents it may still READ or INVOKE, and of every caller's runs of the
    agents it holds APPROVE on (as `run_check_decider` decides one)."""
    live = Agent.objects.filter(deleted_at__isnull=True)
    pending = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING, run__status=RunStatus.AWAITING_APPROVAL
    )
    if not user.is_superuser:
        usable = live.filter(may(user, Action.READ, Action.INVOKE)).values("pk")
        approvable = live.filter(may(user, Action.APPROVE)).values("pk")
        pending = pending.filter(
            Q(run__caller=user, run__agent__in=usable) | Q(run__agent__in=approvable)
        )
    else:
        pending = pending.filter(run__agent__in=live.values("pk"))
    return pending.order_by("-created_at")
