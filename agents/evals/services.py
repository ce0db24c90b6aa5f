"""Writes of datasets, their cases and runs' feedback (docs/api.md#datasets).

Every change of a dataset's cases makes one new revision, under the dataset's row lock: the
cases added carry it as `added_in`, the cases removed or replaced get it as `removed_in`.
A case is never rewritten, so an experiment pinned to a revision reads the cases it ran
(agents.evals.selectors.dataset_cases). Each call is one transaction: a refused case
leaves the dataset as it was.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max, ProtectedError
from django.utils import timezone

from agentbuilder.errors import Conflict, Invalid, Loc, NotFound
from agentbuilder.users import User
from agents.audit.services import audit_record, created, diff, snapshot
from agents.evals.cases import MAX_CASES_PER_CALL, case_check
from agents.evals.selectors import dataset_cases
from agents.models import (
    NAME_PATTERN,
    AgentType,
    Dataset,
    DatasetCase,
    Environment,
    Run,
    RunFeedback,
    RunStatus,
)
from agents.runs.request import TASK_TYPES

# What a dataset's records show of it: never its cases' content, only how many changed and
# the revision that made it.
AUDITED_FIELDS = ("environment", "name", "description", "agent_type", "revision")


def _record(
    user: User, action: str, dataset: Dataset, changes: dict[str, dict[str, Any]] | None = None
) -> None:
    audit_record(
        user=user,
        action=action,
        obj=dataset,
        environment=dataset.environment,
        changes=changes,
    )


def _name_check(name: str) -> None:
    if not re.fullmatch(NAME_PATTERN, name):
        raise Invalid.at(("body", "name"), "1 to 100 letters, digits, '.', '_' or '-' (no spaces)")


def _name_taken(name: str) -> Conflict:
    return Conflict(f"A dataset named '{name}' already exists in this environment.")


@transaction.atomic
def dataset_create(
    *, user: User, environment: Environment, name: str, agent_type: str, description: str = ""
) -> Dataset:
    """A new dataset, at revision 0 with no case (its caller's CREATE is the view's to
    check). Raises Invalid or Conflict (the name is taken)."""
    _name_check(name)
    if agent_type not in AgentType.values:
        raise Invalid.at(("body", "agentType"), f"one of {', '.join(AgentType.values)}")
    if Dataset.objects.filter(environment=environment, name__iexact=name).exists():
        raise _name_taken(name)
    now = timezone.now()
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                environment=environment,
                name=name,
                description=description,
                agent_type=agent_type,
                created_by=user,
                created_at=now,
                modified_at=now,
            )
    except IntegrityError:  # created by another request since the check
        raise _name_taken(name) from None
    _record(user, "create", dataset, created(snapshot(dataset, AUDITED_FIELDS)))
    return dataset


@transaction.atomic
def dataset_update(
    *, user: User, dataset: Dataset, name: str | None = None, description: str | None = None
) -> Dataset:
    """Rename or redescribe `dataset` (its cases and revision stay). Raises Invalid or
    Conflict."""
    if name is not None:
        _name_check(name)
    locked = _locked(dataset)
    taken = Dataset.objects.filter(environment_id=locked.environment_id, name__iexact=name)
    if name is not None and name.lower() != locked.name.lower() and taken.exists():
        raise _name_taken(name)
    before = snapshot(locked, AUDITED_FIELDS)
    if name is not None:
        locked.name = name
    if description is not None:
        locked.description = description
    locked.modified_at = timezone.now()
    locked.save(update_fields=["name", "description", "modified_at"])
    changed = diff(before, snapshot(locked, AUDITED_FIELDS))
    if changed:
        _record(user, "update", locked, changed)
    return locked


@transaction.atomic
def dataset_delete(*, user: User, dataset: Dataset) -> None:
    """Delete `dataset`, its cases and its experiments. Raises Conflict while an alias's
    gate uses it or its experiments allowed an alias's move (the alias history keeps them)."""
    try:
        with transaction.atomic():
            deleted, _ = Dataset.objects.filter(pk=dataset.pk).delete()
    except ProtectedError:
        raise Conflict(
            f"Dataset '{dataset.name}' gates an alias, or one of its experiments allowed an "
            "alias's move (kept in the alias history): remove the gate first; a dataset in "
            "an alias's history stays."
        ) from None
    if deleted:
        _record(user, "delete", dataset)


def _locked(dataset: Dataset) -> Dataset:
    locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
    if locked is None:
        raise NotFound(f"Dataset '{dataset.pk}' not found.")
    return locked


def _next_revision(
    user: User, dataset: Dataset, *, added: int = 0, removed: int = 0, action: str
) -> int:
    """The dataset's next revision, recorded with how many cases it added and removed."""
    dataset.revision += 1
    dataset.modified_at = timezone.now()
    dataset.save(update_fields=["revision", "modified_at"])
    changes: dict[str, dict[str, Any]] = {
        "revision": {"from": dataset.revision - 1, "to": dataset.revision}
    }
    if added:
        changes["casesAdded"] = {"from": None, "to": added}
    if removed:
        changes["casesRemoved"] = {"from": None, "to": removed}
    _record(user, action, dataset, changes)
    return dataset.revision


def _case(dataset: Dataset, stored: dict[str, Any], position: int, revision: int) -> DatasetCase:
    return DatasetCase(
        dataset=dataset,
        position=position,
        input=stored["input"],
        expected=stored.get("expected"),
        metadata=stored.get("metadata"),
        added_in=revision,
    )


@transaction.atomic
def cases_add(*, user: User, dataset: Dataset, cases: Any, loc: Loc = ("body",)) -> int:
    """Check every case and add them after the dataset's others, as one new revision, which
    is returned. Raises Invalid at the first bad cases' fields (under `loc`, by index):
    then nothing is added."""
    if not isinstance(cases, Sequence) or isinstance(cases, str | bytes):
        raise Invalid.at(loc, "a JSON array of cases (or JSON Lines, one case a line)")
    if not cases:
        raise Invalid.at(loc, "no case to add")
    if len(cases) > MAX_CASES_PER_CALL:
        raise Invalid.at(
            loc, f"{len(cases)} cases: at most {MAX_CASES_PER_CALL:,} a call; send the rest after"
        )
    stored, problems = [], []
    for i, data in enumerate(cases):
        try:
            stored.append(case_check(data, agent_type=dataset.agent_type, loc=(*loc, i)))
        except Invalid as exc:
            problems.extend(exc.errors)
            if len(problems) >= 20:  # enough to fix a file by; the rest likely alike
                break
    if problems:
        raise Invalid(problems)
    locked = _locked(dataset)
    start = (locked.cases.aggregate(last=Max("position"))["last"] or 0) + 1
    revision = _next_revision(user, locked, added=len(stored), action="cases.add")
    DatasetCase.objects.bulk_create(
        [_case(locked, s, start + i, revision) for i, s in enumerate(stored)], batch_size=1000
    )
    dataset.revision = revision
    return revision


@transaction.atomic
def case_replace(
    *, user: User, dataset: Dataset, case_id: uuid.UUID, case: Any, loc: Loc = ("body",)
) -> DatasetCase:
    """Replace a case of the current revision with `case`, in its place, as a new revision.
    Raises Invalid or NotFound."""
    stored = case_check(case, agent_type=dataset.agent_type, loc=loc)
    locked = _locked(dataset)
    old = dataset_cases(locked).filter(pk=case_id).first()
    if old is None:
        raise NotFound(f"Case '{case_id}' is not in dataset '{locked.name}' now.")
    revision = _next_revision(user, locked, added=1, removed=1, action="cases.replace")
    DatasetCase.objects.filter(pk=old.pk).update(removed_in=revision)
    new = _case(locked, stored, old.position, revision)
    new.source_run_id = old.source_run_id
    new.save()
    dataset.revision = revision
    return new


@transaction.atomic
def cases_remove(*, user: User, dataset: Dataset, case_ids: Sequence[uuid.UUID]) -> int:
    """Remove cases of the current revision, as a new revision (returned). Raises NotFound
    naming a case that is not there: then none is removed."""
    locked = _locked(dataset)
    wanted = set(case_ids)
    present = set(dataset_cases(locked).filter(pk__in=wanted).values_list("pk", flat=True))
    missing = wanted - present
    if missing:
        raise NotFound(
            f"Case '{sorted(map(str, missing))[0]}' is not in dataset '{locked.name}' now."
        )
    revision = _next_revision(user, locked, removed=len(present), action="cases.remove")
    DatasetCase.objects.filter(pk__in=present).update(removed_in=revision)
    dataset.revision = revision
    return revision


def run_case(run: Run, expected_output: Any = None) -> dict[str, Any]:
    """A case (wire form) of what `run` was asked, expecting its answer (or
    `expected_output`, when given)."""
    if run.status != RunStatus.COMPLETED:
        raise Invalid.at(
            ("body", "runId"),
            f"the run is {run.status}: only a completed run's "
            "answer can be a case's expected output",
        )
    messages = run.messages or []
    if run.agent.agent_type in TASK_TYPES:
        inputs = next((m["inputs"] for m in messages if "inputs" in m), None)
        case_input: dict[str, Any] = {"inputs": inputs or {}}
    else:
        # What the caller sent: up to its last user message (the row appends the run's
        # answer, and its tool calls, after the messages the request brought).
        last = max(
            (i for i, m in enumerate(messages) if m.get("role") in ("user", "system")), default=-1
        )
        asked = [{"role": m["role"], "content": m.get("content", "")} for m in messages[: last + 1]]
        case_input = {"messages": asked}
    output = run.output
    if isinstance(output, dict) and "customOutputs" in output:  # a RAG answer and its sources
        output = output.get("answer")
    case: dict[str, Any] = {
        "input": case_input,
        "expected": {"output": output if expected_output is None else expected_output},
        "metadata": {"runId": str(run.pk)},
    }
    return case


@transaction.atomic
def case_from_run(
    *, user: User, dataset: Dataset, run: Run, expected_output: Any = None
) -> DatasetCase:
    """Add `run` to `dataset` as a case: its input, its answer as the expected output
    (`expected_output` instead, when given). The caller's READ of the run and EDIT of the
    dataset are the view's to check. Raises Invalid (the run's agent is of another type,
    or the run did not complete)."""
    if run.agent.agent_type != dataset.agent_type:
        raise Invalid.at(
            ("body", "datasetId"),
            f"dataset '{dataset.name}' holds cases of {dataset.agent_type} agents; the run's "
            f"agent is a {run.agent.agent_type} agent",
        )
    cases_add(user=user, dataset=dataset, cases=[run_case(run, expected_output)])
    case = dataset_cases(dataset).order_by("-position").first()
    assert case is not None
    DatasetCase.objects.filter(pk=case.pk).update(source_run=run)
    case.source_run = run
    return case


def feedback_set(*, user: User, run: Run, score: int, comment: str = "") -> RunFeedback:
    """`user`'s feedback on `run`, replacing the one they gave before. Raises Invalid."""
    if score not in (1, -1):
        raise Invalid.at(("body", "score"), "1 (thumbs up) or -1 (thumbs down)")
    feedback, _ = RunFeedback.objects.update_or_create(
        run=run,
        user=user,
        defaults={"score": score, "comment": comment, "created_at": timezone.now()},
    )
    return feedback
