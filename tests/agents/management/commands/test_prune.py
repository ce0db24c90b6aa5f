"""`manage.py prune [--days N] [--dry-run]` (agents/management/commands/prune.py): what it
removed, or would, by RUN_RETENTION_DAYS or --days; nothing when retention is off."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from agents.models import Run, RunEvent

pytestmark = pytest.mark.django_db


def prune(*args: str) -> str:
    out = io.StringIO()
    call_command("prune", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def runs(make_agent: Callable[..., Any]) -> None:
    agent = make_agent("calc")
    for days_ago in (100, 100, 40, 1):
        run = Run.objects.create(
            agent=agent, version=agent.versions.get(), protocol="native", status="completed"
        )
        at = timezone.now() - timedelta(days=days_ago)
        Run.objects.filter(pk=run.pk).update(started_at=at, completed_at=at)
        RunEvent.objects.create(run=run, index=0, event={"type": "text_delta", "text": "x"})


@pytest.mark.usefixtures("runs")
def test_it_prints_what_it_removed_by_the_setting(settings: Any) -> None:
    settings.RUN_RETENTION_DAYS = 90

    out = prune()

    assert "Removed what ended before" in out
    assert "(90 days ago)" in out
    assert "  runs: 2\n" in out
    assert "  run events: 2\n" in out
    assert "  webhook deliveries: 0\n" in out
    assert "in 1 transaction(s)." in out
    assert Run.objects.count() == 2


@pytest.mark.usefixtures("runs")
def test_a_dry_run_prints_what_it_would_remove_and_removes_nothing() -> None:
    out = prune("--days", "30", "--dry-run")

    assert "Would remove what ended before" in out
    assert "(30 days ago)" in out
    assert "  runs: 3\n" in out
    assert "transaction" not in out
    assert Run.objects.count() == 4


@pytest.mark.usefixtures("runs")
def test_days_overrides_a_setting_of_zero_and_zero_alone_prunes_nothing(settings: Any) -> None:
    settings.RUN_RETENTION_DAYS = 0

    assert "kept forever; nothing pruned" in prune()
    assert Run.objects.count() == 4
    assert "  runs: 3\n" in prune("--days", "30")
    assert Run.objects.count() == 1


def test_days_below_one_is_refused() -> None:
    with pytest.raises(CommandError, match="--days must be 1 or more"):
        prune("--days", "0")
