"""Gated aliases (docs/api.md#gated-aliases): an alias that moves only to a version that
passes a dataset.

A gate names a dataset, scorers and a minimum mean score per scorer. Moving the alias runs
an experiment of the new version on the dataset's current revision, or reuses a completed
one of the same version, revision and scorers, and refuses the move (409, with the
failing cases) when a mean falls short. The experiment is run before the alias's row is
locked, since its runs need committed rows; the move then records the experiment that
allowed it. An AUDIT holder may force a move past the gate with a reason, kept in the
alias history.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from agentbuilder.errors import Conflict, ErrorItem, Invalid, Loc, NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.permissions import Action, agents_with
from agents.audit.services import audit_record, created, diff, snapshot
from agents.evals.experiments import ExperimentSpec, experiment_start, scorers_key
from agents.evals.runner import experiment_run_here
from agents.evals.scorers.registry import scorers_check
from agents.models import (
    Agent,
    AliasGate,
    Dataset,
    Experiment,
    ExperimentResult,
    ExperimentStatus,
    VersionAlias,
)
from agents.schedules.request import version_check
from agents.selectors.aliases import alias_name_problem
from agents.services.aliases import alias_set

FAILING_CASES_SHOWN = 20
# What a gate's records show of it.
AUDITED_FIELDS = ("name", "dataset", "scorers", "thresholds")


def gate_for(agent: Agent, name: str) -> AliasGate | None:
    return (
        AliasGate.objects.select_related("dataset").filter(agent=agent, name__iexact=name).first()
    )


@transaction.atomic
def gate_set(
    *, user: User, agent: Agent, name: str, dataset: Dataset, scorers: Any, thresholds: Any
) -> AliasGate:
    """Set (or replace) the gate of alias `name` (set or not yet). Raises Invalid."""
    problem = alias_name_problem(name)
    if problem:
        raise Invalid.at(("path", "name"), problem)
    problems: list[ErrorItem] = []
    if dataset.environment_id != agent.environment_id or dataset.agent_type != agent.agent_type:
        problems.append(
            ErrorItem(("body", "datasetId"), f"not a dataset of {agent.agent_type} agents here")
        )
    checked: list[dict[str, Any]] = []
    try:
        checked = scorers_check(scorers, loc=("body", "scorers"))
    except Invalid as exc:
        problems.extend(exc.errors)
    names = {s.get("label") or s["name"] for s in checked}
    if not isinstance(thresholds, dict) or not thresholds:
        problems.append(ErrorItem(("body", "thresholds"), "{<scorer>: minimum mean, 0 to 1}"))
    else:
        for key, minimum in thresholds.items():
            at = ("body", "thresholds", key)
            if checked and key not in names:
                problems.append(ErrorItem(at, f"not one of the gate's scorers: {sorted(names)}"))
            elif (
                not isinstance(minimum, int | float)
                or isinstance(minimum, bool)
                or not 0 <= minimum <= 1
            ):
                problems.append(ErrorItem(at, "a number from 0 to 1"))
    if problems:
        raise Invalid(problems)
    gate = gate_for(agent, name)
    before = {} if gate is None else snapshot(gate, AUDITED_FIELDS)
    if gate is None:
        gate = AliasGate(agent=agent, name=name)
    gate.dataset, gate.scorers, gate.thresholds = dataset, checked, dict(thresholds)
    gate.updated_at, gate.updated_by = timezone.now(), user
    gate.save()
    after = snapshot(gate, AUDITED_FIELDS)
    changes = diff(before, after) if before else created(after)
    if changes:
        _record(user, "gate.set", agent, gate, changes)
    return gate


@transaction.atomic
def gate_delete(*, user: User, agent: Agent, name: str) -> None:
    """Remove the gate of alias `name`. Raises NotFound."""
    gate = AliasGate.objects.select_for_update().filter(agent=agent, name__iexact=name).first()
    if gate is None:
        raise NotFound(f"Alias '{name}' of agent '{agent.name}' has no gate.")
    before, gate_id = snapshot(gate, AUDITED_FIELDS), gate.pk
    gate.delete()
    gate.pk = gate_id  # the record names the row that went
    _record(user, "gate.delete", agent, gate, diff(before, dict.fromkeys(before)))


def _record(
    user: User, action: str, agent: Agent, gate: AliasGate, changes: dict[str, dict[str, Any]]
) -> None:
    audit_record(
        user=user,
        action=action,
        obj=gate,
        object_type="gate",
        object_repr=f"{agent.name}@{gate.name}",
        environment=agent.environment,
        changes=changes,
    )


@dataclass(frozen=True)
class Verdict:
    experiment: Experiment
    reused: bool
    misses: dict[str, dict[str, float | None]]  # scorer → {mean, minimum}

    @property
    def passed(self) -> bool:
        return not self.misses


def gate_verdict(*, user: User, agent: Agent, gate: AliasGate, version: str) -> Verdict:
    """Whether `version` passes `gate`: from a completed experiment of the same version,
    revision and scorers, or one run now (as `user`). Raises Invalid (an unknown version)."""
    dataset = gate.dataset
    spec = ExperimentSpec(version=version, scorers=gate.scorers)
    resolved = version_check(agent=agent, version=version)
    experiment = (
        Experiment.objects.filter(
            agent=agent,
            version=resolved,
            dataset=dataset,
            revision=dataset.revision,
            scorers_key=scorers_key(gate.scorers),
            status=ExperimentStatus.COMPLETED,
        )
        .order_by("-created_at")
        .first()
    )
    reused = experiment is not None
    if experiment is None:
        experiment = experiment_start(
            user=user, agent=agent, dataset=dataset, spec=spec, dispatch=False
        )
        experiment_run_here(experiment)
        experiment.refresh_from_db()
    means = (experiment.summary or {}).get("scorers", {})
    misses: dict[str, dict[str, float | None]] = {}
    for name, minimum in gate.thresholds.items():
        mean = means.get(name, {}).get("mean")
        if experiment.status != ExperimentStatus.COMPLETED or mean is None or mean < minimum:
            misses[name] = {"mean": mean, "minimum": minimum}
    return Verdict(experiment, reused, misses)


def alias_move(
    *,
    user: User,
    agent: Agent,
    name: str,
    version_number: int,
    force: bool = False,
    reason: str = "",
    name_loc: Loc = ("path", "name"),
    version_loc: Loc = ("body", "version"),
) -> VersionAlias:
    """Point alias `name` at version `version_number`, through its gate if it has one.
    Raises Conflict (409: the gate refused, with the experiment and its failing cases),
    PermissionDenied (a forced move without AUDIT), Invalid or NotFound."""
    move = functools.partial(
        alias_set,
        user=user,
        agent=agent,
        name=name,
        version_number=version_number,
        name_loc=name_loc,
        version_loc=version_loc,
    )
    if force:
        if not reason.strip():
            raise Invalid.at(("body", "reason"), "a forced move says why")
        if not agents_with(user, Action.AUDIT).filter(pk=agent.pk).exists():
            raise PermissionDenied("Forcing a move past an alias's gate needs AUDIT on the agent.")
        return move(forced_reason=reason)
    gate = gate_for(agent, name)
    if gate is None:
        return move()
    if not agent.versions.filter(number=version_number).exists():
        raise Invalid.at(version_loc, f"agent '{agent.name}' has no version {version_number}")
    verdict = gate_verdict(user=user, agent=agent, gate=gate, version=str(version_number))
    if not verdict.passed:
        raise Conflict(
            f"Version {version_number} does not pass the gate of alias '{name}' on dataset "
            f"'{gate.dataset.name}': "
            + "; ".join(
                f"{scorer} mean {m['mean']} < {m['minimum']}"
                for scorer, m in verdict.misses.items()
            ),
            experimentId=str(verdict.experiment.pk),
            misses=verdict.misses,
            failingCases=failing_cases(verdict.experiment),
        )
    return move(allowed_by=verdict.experiment)


def failing_cases(experiment: Experiment, limit: int = FAILING_CASES_SHOWN) -> list[dict[str, Any]]:
    """The first cases the experiment failed: what was asked, answered and scored."""
    failed = (
        ExperimentResult.objects.filter(experiment=experiment, passed=False)
        .select_related("case")
        .order_by("position", "repetition")[:limit]
    )
    return [
        {
            "caseId": str(r.case_id),
            "position": r.position,
            "input": r.case.input,
            "expected": r.case.expected,
            "answer": r.answer,
            "scores": r.scores,
            "runId": None if r.run_id is None else str(r.run_id),
        }
        for r in failed
    ]
