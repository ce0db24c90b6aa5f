"""Reads of runs: those the caller may see, a list, one run, one thread."""

from __future__ import annotations

import functools
import uuid

from django.db import connection
from django.db.models import Q, QuerySet

from agentbuilder.errors import NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import Action, held_array, may
from agents.models import Agent, Environment, Run, RunStatus


def runs_visible(*, user: User, environment: Environment | None = None) -> QuerySet[Run]:
    """Runs (of `environment`, or of every one) the caller may read: its own, of agents it
    may still READ or INVOKE, and every caller's of the agents it holds AUDIT on
    (docs/api.md#runs)."""
    in_env = Agent.objects.filter(deleted_at__isnull=True)
    if environment is not None:
        in_env = in_env.filter(environment=environment)
    usable = in_env.filter(may(user, Action.READ, Action.INVOKE)).values("pk")
    audited = in_env.filter(may(user, Action.AUDIT)).values("pk")
    return Run.objects.filter(Q(caller=user, agent__in=usable) | Q(agent__in=audited))


def run_list(
    *,
    user: User,
    environment: Environment,
    agent_id: uuid.UUID | None = None,
    status: str | None = None,
    thread_id: str | None = None,
    caller_id: int | None = None,
    schedule_id: uuid.UUID | None = None,
) -> QuerySet[Run]:
    """The caller's runs in `environment` (every caller's where it holds AUDIT), newest
    first."""
    runs = runs_visible(user=user, environment=environment)
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    if thread_id:
        runs = runs.filter(thread_id=thread_id)
    if caller_id is not None:
        runs = runs.filter(caller_id=caller_id)
    if schedule_id:
        runs = runs.filter(schedule_id=schedule_id)
    return runs.order_by("-started_at", "-id")


def runs_live_by_client_request(
    *, user: User, protocol: str, client_request_id: str
) -> list[uuid.UUID]:
    """The caller's runs not ended yet that a request of that protocol with that client id
    started (an id a client may use again later: ended runs are not its)."""
    return list(
        Run.objects.filter(
            caller=user,
            protocol=protocol,
            client_request_id=client_request_id,
            status__in=(RunStatus.QUEUED, RunStatus.IN_PROGRESS),
        ).values_list("pk", flat=True)
    )


def run_get(*, user: User, environment: Environment, run_id: uuid.UUID) -> Run:
    run = runs_visible(user=user, environment=environment).filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"Run '{run_id}' not found.")
    return run


def run_check_visible(*, user: User, environment: Environment, run_id: uuid.UUID) -> None:
    """Raises NotFound unless the caller may read the run, as `runs_visible` says (its own
    run of an agent it may READ or INVOKE, any run of one it holds AUDIT on). One fixed
    statement, not the run's row: every follower of a run's events asks it."""
    row = _caller_and_held(user, environment, run_id)
    if row is not None:
        caller_id, held = row
        if user.is_superuser or Action.AUDIT in held:
            return
        if caller_id == user.pk and {Action.READ, Action.INVOKE} & set(held):
            return
    raise NotFound(f"Run '{run_id}' not found.")


def run_check_decider(*, user: User, environment: Environment, run_id: uuid.UUID) -> None:
    """Raises unless the caller may decide the run's approval requests: its own run of an
    agent it may READ or INVOKE, or any run of one it holds APPROVE on. NotFound for a run
    it may not see, PermissionDenied for one it may only read (AUDIT)."""
    row = _caller_and_held(user, environment, run_id)
    if row is not None:
        caller_id, held = row
        if user.is_superuser or Action.APPROVE in held:
            return
        if caller_id == user.pk and {Action.READ, Action.INVOKE} & set(held):
            return
        if Action.AUDIT in held:
            raise PermissionDenied(
                "Only the run's caller or a holder of APPROVE on its agent decides its approvals."
            )
    raise NotFound(f"Run '{run_id}' not found.")


def _caller_and_held(
    user: User, environment: Environment, run_id: uuid.UUID
) -> tuple[int | None, list[str]] | None:
    """The run's caller and what `user` holds on its agent, if the run is of a live agent
    of `environment` (one fixed statement)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _visible_sql(), {"run": run_id, "environment": environment.pk, "user": user.pk}
        )
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


@functools.cache
def _visible_sql() -> str:
    quote = connection.ops.quote_name
    runs, agents = quote(Run._meta.db_table), quote(Agent._meta.db_table)
    # Table names from the models' metadata; every value is a parameter.
    return f"""
        SELECT r.caller_id, {held_array("a")}
        FROM {runs} r JOIN {agents} a ON a.id = r.agent_id
        WHERE r.id = %(run)s AND a.environment_id = %(environment)s AND a.deleted_at IS NULL
    """  # noqa: S608


def thread_runs(
    *, user: User, environment: Environment, thread_id: str, caller_id: int | None = None
) -> list[Run]:
    """The runs of one caller's thread (the caller's own, or with AUDIT `caller_id`'s),
    oldest first. A thread is its caller's: the same id from another caller is another
    thread. Raises NotFound when there is none."""
    runs = list(
        run_list(
            user=user,
            environment=environment,
            thread_id=thread_id,
            caller_id=user.pk if caller_id is None else caller_id,
        ).order_by("started_at", "id")
    )
    if not runs:
        raise NotFound(f"Thread '{thread_id}' not found.")
    return runs
