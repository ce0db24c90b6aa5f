"""Run events are pruned RUN_EVENTS_TTL after their run ended (agents.runs.event_prune):
only ended runs' events, in batches, at most once a PRUNE_EVERY_SECONDS per process."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents.models import Run, RunEvent
from agents.runs import event_prune
from agents.runs.event_prune import run_events_prune, run_events_prune_due

pytestmark = pytest.mark.django_db


def _run(agent: Any, owner: Any, status: str, ended_hours_ago: float | None) -> Run:
    run = Run.objects.create(
        agent=agent,
        version=agent.versions.get(number=1),
        caller=owner,
        protocol="native",
        status=status,
        completed_at=None
        if ended_hours_ago is None
        else timezone.now() - timedelta(hours=ended_hours_ago),
    )
    RunEvent.objects.bulk_create(
        RunEvent(run=run, index=i, event={"type": "text_delta", "text": str(i)}) for i in range(3)
    )
    return run


@pytest.fixture
def runs(make_agent: Any, owner: Any, settings: Any) -> dict[str, Run]:
    settings.RUN_EVENTS_TTL = 24 * 3600
    agent = make_agent("Calculator")
    return {
        "completed long ago": _run(agent, owner, "completed", 25),
        "canceled long ago": _run(agent, owner, "canceled", 30),
        "completed lately": _run(agent, owner, "completed", 23),
        "live for long": _run(agent, owner, "in_progress", None),
    }


def kept(runs: dict[str, Run]) -> dict[str, int]:
    return {name: RunEvent.objects.filter(run=run).count() for name, run in runs.items()}


def test_only_the_events_of_runs_ended_over_the_ttl_ago_are_pruned(runs: dict[str, Run]) -> None:
    assert run_events_prune() == 6

    assert kept(runs) == {
        "completed long ago": 0,
        "canceled long ago": 0,
        "completed lately": 3,
        "live for long": 3,
    }
    assert Run.objects.count() == 4  # the runs stay


def test_a_prune_deletes_one_batch_at_a_time(runs: dict[str, Run]) -> None:
    assert [run_events_prune(batch=4), run_events_prune(batch=4), run_events_prune(batch=4)] == [
        4,
        2,
        0,
    ]


def test_a_process_prunes_at_most_once_an_interval_unless_a_batch_was_full(
    runs: dict[str, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_prune, "_due_at", 0.0)
    monkeypatch.setattr(event_prune, "BATCH", 4)

    full = run_events_prune_due()  # a full batch: more are due at the next pass
    rest = run_events_prune_due()
    _run(runs["completed long ago"].agent, runs["completed long ago"].caller, "completed", 48)
    later = run_events_prune_due()  # not before PRUNE_EVERY_SECONDS

    assert (full, rest, later) == (4, 2, 0)
    assert (
        RunEvent.objects.filter(run__completed_at__lt=timezone.now() - timedelta(hours=47)).count()
        == 3
    )
