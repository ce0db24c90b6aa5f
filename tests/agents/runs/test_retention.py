"""Retention (agents.runs.retention): runs that ended over RUN_RETENTION_DAYS ago go with
their events, approvals, push configs and deliveries, in batches of one transaction each;
live runs, young runs and runs with feedback stay; experiments and cases keep their rows;
beat prunes daily."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agentbuilder.celery import app
from agents.models import (
    ApprovalRequest,
    DatasetCase,
    Experiment,
    ExperimentResult,
    PushConfig,
    Run,
    RunEvent,
    RunFeedback,
    WebhookDelivery,
)
from agents.runs import retention
from agents.runs.retention import runs_prune
from agents.schedules.beat import ScheduleScheduler
from tests.support.datasets_admin import dataset_with

pytestmark = pytest.mark.django_db

DAYS = 90


def _run(agent: Any, status: str = "completed", days_ago: float = 100, events: int = 3) -> Run:
    run = Run.objects.create(
        agent=agent, version=agent.versions.get(number=1), protocol="native", status=status
    )
    at = timezone.now() - timedelta(days=days_ago)
    ended = at + timedelta(seconds=2) if status in ("completed", "failed", "canceled") else None
    Run.objects.filter(pk=run.pk).update(started_at=at, completed_at=ended)
    RunEvent.objects.bulk_create(
        RunEvent(run=run, index=i, event={"type": "text_delta", "text": str(i)})
        for i in range(events)
    )
    return run


def _delivery(env: Any, run: Run | None, days_ago: float, status: str = "delivered") -> Any:
    return WebhookDelivery.objects.create(
        key=str(uuid.uuid4()),
        environment=env,
        run=run,
        event="run.completed",
        format="standard",
        url="http://127.0.0.1:9/hook",
        status=status,
        created_at=timezone.now() - timedelta(days=days_ago),
    )


@pytest.fixture
def agent(make_agent: Callable[..., Any]) -> Any:
    return make_agent("calc")


def test_old_ended_runs_go_with_what_hangs_on_them_and_the_rest_stay(
    agent: Any, env: Any, admin_user: Any
) -> None:
    old = {status: _run(agent, status) for status in ("completed", "failed", "canceled")}
    kept = {
        "young": _run(agent, days_ago=89),
        "in progress": _run(agent, "in_progress"),
        "queued": _run(agent, "queued"),
        "awaiting approval": _run(agent, "awaiting_approval"),
        "with feedback": _run(agent),
    }
    RunFeedback.objects.create(run=kept["with feedback"], user=admin_user, score=1)
    ApprovalRequest.objects.create(
        id=uuid.uuid4(), run=old["completed"], call_id="c", tool="t", arguments="{}"
    )
    config = PushConfig.objects.create(
        run=old["completed"], config_id="p", url="http://127.0.0.1:9/push", dialect="1.0"
    )
    _delivery(env, old["completed"], days_ago=100)
    pushed_for_another = _delivery(env, kept["young"], days_ago=1)
    WebhookDelivery.objects.filter(pk=pushed_for_another.pk).update(push_config=config)

    report = runs_prune(days=DAYS)

    assert set(Run.objects.values_list("pk", flat=True)) == {r.pk for r in kept.values()}
    assert not RunEvent.objects.filter(run__in=old.values()).exists()
    assert RunEvent.objects.filter(run__in=kept.values()).count() == 3 * len(kept)
    assert not ApprovalRequest.objects.exists()
    assert not PushConfig.objects.exists()
    assert list(WebhookDelivery.objects.values_list("pk", "push_config")) == [
        (pushed_for_another.pk, None)
    ]
    assert (report.runs, report.events, report.approval_requests, report.push_configs) == (
        3,
        9,
        1,
        1,
    )
    assert report.deliveries == 1


def test_an_experiment_and_a_case_keep_their_rows_without_the_old_run(
    agent: Any, env: Any, admin_user: Any
) -> None:
    dataset = dataset_with(admin_user, env, "What is 3x5?")
    case = DatasetCase.objects.get(dataset=dataset)
    experiment = Experiment.objects.create(
        agent=agent,
        version=agent.versions.get(),
        dataset=dataset,
        revision=1,
        scorers=[{"name": "exact"}],
        scorers_key="k",
        status="completed",
    )
    eval_run, source = _run(agent), _run(agent)
    result = ExperimentResult.objects.create(
        experiment=experiment, case=case, position=0, status="scored", run=eval_run, answer="15"
    )
    DatasetCase.objects.filter(pk=case.pk).update(source_run=source)

    report = runs_prune(days=DAYS)

    result.refresh_from_db()
    case.refresh_from_db()
    assert (result.run_id, result.answer, case.source_run_id) == (None, "15", None)
    assert (report.experiment_results_unlinked, report.dataset_cases_unlinked) == (1, 1)
    assert not Run.objects.exists()


def test_runs_go_in_batches_of_one_transaction_each(agent: Any) -> None:
    for _ in range(5):
        _run(agent, events=1)
    _run(agent, days_ago=1)
    statements: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        report = runs_prune(days=DAYS, batch=2)

    run_deletes = [s for s in statements if s.startswith('DELETE FROM "agents_run" ')]
    # Inside the test's transaction each batch's transaction is a savepoint.
    savepoints = [s for s in statements if s.startswith("SAVEPOINT")]
    assert len(run_deletes) == 3 == report.batches
    # Three full or partial batches of runs, and one of deliveries that found none.
    assert len(savepoints) == 3 + 1
    assert (report.runs, report.events, Run.objects.count()) == (5, 5, 1)


def test_a_dry_run_counts_what_a_prune_removes_and_deletes_nothing(
    agent: Any, env: Any, admin_user: Any
) -> None:
    for _ in range(3):
        _delivery(env, _run(agent), days_ago=100)
    _delivery(env, None, days_ago=100)
    _delivery(env, None, days_ago=100, status="pending")
    _delivery(env, _run(agent, days_ago=1), days_ago=1)

    counted = runs_prune(days=DAYS, dry_run=True)
    assert (Run.objects.count(), WebhookDelivery.objects.count()) == (4, 6)
    done = runs_prune(days=DAYS)

    assert counted.counts() == done.counts()
    assert (done.runs, done.events, done.deliveries) == (3, 9, 4)
    assert list(WebhookDelivery.objects.values_list("status", flat=True).order_by("status")) == [
        "delivered",
        "pending",
    ]


def test_old_deliveries_of_kept_runs_go_in_batches_by_key(
    agent: Any, env: Any, admin_user: Any
) -> None:
    judged = _run(agent)
    RunFeedback.objects.create(run=judged, user=admin_user, score=-1)
    for _ in range(5):
        _delivery(env, judged, days_ago=100)
    young = _delivery(env, judged, days_ago=10)

    report = runs_prune(days=DAYS, batch=2)

    assert list(WebhookDelivery.objects.all()) == [young]
    assert (report.deliveries, report.batches, report.runs) == (5, 3, 0)


def test_every_table_that_points_at_runs_is_pruned_cleared_or_keeps_the_run() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.conrelid::regclass::text, a.attname FROM pg_constraint c"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)"
            " WHERE c.contype = 'f' AND c.confrelid = %s::regclass",
            [Run._meta.db_table],
        )
        pointing = set(cursor.fetchall())
    handled = {
        (model._meta.db_table, column)
        for model, column in (*retention.DELETED_WITH_RUN, *retention.CLEARED, *retention.KEEPS_RUN)
    }
    assert pointing == handled


def test_zero_days_is_refused() -> None:
    with pytest.raises(ValueError, match="days"):
        runs_prune(days=0)


# ---------------------------------------------------------------- beat


# Beat's scheduler closes stale connections as it loads: committed tests, as beat's are.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_beat_installs_the_daily_prune_as_a_periodic_task() -> None:
    scheduler = ScheduleScheduler(app=app)  # what beat, embedded or not, starts with
    try:
        entry = scheduler.schedule["prune runs past RUN_RETENTION_DAYS"]
    finally:
        scheduler._finalize.cancel()

    assert entry.task == retention.TASK
    task = PeriodicTask.objects.select_related("crontab").get(task=retention.TASK)
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("17", "3", "*")


# The task closes its connection after it, as in beat's thread it must.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_task_prunes_by_the_setting_and_not_at_zero(agent: Any, settings: Any) -> None:
    _run(agent, days_ago=40)
    app.loader.import_default_modules()
    task = app.tasks[retention.TASK]

    settings.RUN_RETENTION_DAYS = 0
    task.delay()
    assert Run.objects.count() == 1

    settings.RUN_RETENTION_DAYS = 30
    task.delay()
    assert not Run.objects.exists()
