"""Running an experiment (docs/architecture.md#experiments): slots that take its cases one
at a time, run each through the run path and score it.

- **Slots.** An experiment runs in `concurrency` slots: Celery tasks (`agents.experiment_slot`)
  on any worker with a broker, else threads of this process. A slot claims the next
  pending result row (`FOR UPDATE SKIP LOCKED`: two slots never take one case, and slots on
  two workers share the experiment), runs its case as a run of the requester (protocol
  `eval`, in the process's runner, agents.runs.detached, as a background run is run), reads
  the run's record, scores it and writes the scores with the progress in one statement. The
  slot that records the last case writes the summary and ends the experiment.
- **Leases.** A slot leases the experiment and the case it runs (agentbuilder.liveness). A
  case whose slot died is run again once (its run was closed `interrupted` by the runs'
  sweep), then scored as failed; an experiment whose slots all died with cases pending is
  handed to workers again by any live process's sweep. So an experiment ends, always.
- **Cancel** (agents.evals.experiments) marks the pending cases canceled: a slot finds
  nothing more to claim and stops.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from agentbuilder import liveness
from agentbuilder.errors import DomainError, Invalid
from agents.evals.cases import expected_of, input_text
from agents.evals.scorers.base import Observed, Score, Scorer, ToolCall, failed_run
from agents.evals.scorers.registry import scorers_build
from agents.evals.summary import summary_of
from agents.models import (
    AgentWebhook,
    DeliveryFormat,
    Experiment,
    ExperimentResult,
    ExperimentStatus,
    ResultStatus,
    Run,
    RunStatus,
    WebhookDelivery,
)
from agents.protocols.native.request import InvokeRequest, runtime_messages
from agents.runs import detached
from agents.runs.request import CHAT_TYPES, TASK_TYPES, RunRequest
from agents.runs.start import Invocation, invocation_start
from agents.webhooks import dispatch as webhooks_dispatch
from agents.webhooks.events import WebhookEvent

logger = logging.getLogger(__name__)

TASK = "agents.experiment_slot"
PROTOCOL = "eval"  # as an experiment's runs name their protocol
EXPERIMENTS, RESULTS = "experiments", "experiment-results"
# A case whose slot died is run once more; then it is scored as failed.
MAX_ATTEMPTS = 2
INTERRUPTED = "the process running this case stopped (twice)"


def register() -> None:
    liveness.register(EXPERIMENTS, renew=_renew_experiments, sweep=experiments_sweep)
    liveness.register(RESULTS, renew=_renew_results, sweep=lambda: None)


# ---------------------------------------------------------------- dispatch


def experiment_dispatch(experiment: Experiment) -> None:
    """Hand the experiment's slots to workers (to this process's slot threads without a
    broker). A broker that refuses them leaves the experiment to the sweep."""
    slots = min(experiment.concurrency, max(experiment.total, 1))
    for _ in range(slots):
        if settings.CELERY_TASK_ALWAYS_EAGER:
            _pool().submit(_slot_in_thread, experiment.pk)
            continue
        try:
            current_app.send_task(TASK, args=[str(experiment.pk)])
        except Exception:
            logger.warning(
                "experiment %s: the broker refused a slot; the sweep retries", experiment.pk
            )
            return


def experiment_run_here(experiment: Experiment) -> None:
    """Run the experiment to its end in this process, in its `concurrency` slots (a gate's
    move, `manage.py agents eval`): returns when every case has been run or canceled."""
    slots = min(experiment.concurrency, max(experiment.total, 1))
    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="experiment-here") as pool:
        for done in [pool.submit(_slot_in_thread, experiment.pk) for _ in range(slots)]:
            done.result()


@functools.cache
def _pool() -> ThreadPoolExecutor:
    # Slots wait on their runs (run in the process's runner): threads, not cores.
    return ThreadPoolExecutor(
        max_workers=int(settings.EXPERIMENT_SLOTS), thread_name_prefix="experiment-slot"
    )


def _slot_in_thread(experiment_id: uuid.UUID) -> int:
    try:
        return slot_run(experiment_id)
    except Exception:
        logger.exception("experiment %s: a slot broke", experiment_id)
        raise
    finally:
        connection.close()  # the slot's thread keeps no connection between experiments


# ---------------------------------------------------------------- a slot


@dataclass(frozen=True)
class _Setup:
    experiment: Experiment
    scorers: list[Scorer]


@dataclass(frozen=True)
class _Item:
    id: int
    attempt: int  # which claim of the case this is: only its own scores are written
    case_input: dict[str, Any]
    expected: dict[str, Any] | None


def slot_run(experiment_id: uuid.UUID) -> int:
    """One slot: claim and run the experiment's pending cases until none is left; the
    number it ran."""
    setup = _setup(experiment_id)
    if setup is None:
        return 0
    liveness.hold(EXPERIMENTS, experiment_id)
    ran = 0
    try:
        while (item := _claim(experiment_id)) is not None:
            liveness.hold(RESULTS, item.id)
            try:
                if not _run_case(setup, item):
                    break  # the process stops: the case goes back, another takes it
            finally:
                liveness.release(RESULTS, item.id)
            ran += 1
    finally:
        liveness.release(EXPERIMENTS, experiment_id)
    return ran


def _setup(experiment_id: uuid.UUID) -> _Setup | None:
    """The experiment, `running` from now; None when it has ended or is gone."""
    with transaction.atomic():
        experiment = (
            Experiment.objects.select_for_update(of=("self",))
            .select_related("agent__environment", "version", "requester")
            .filter(
                pk=experiment_id,
                status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING],
            )
            .first()
        )
        if experiment is None:
            return None
        if experiment.requester is None:  # deleted since: nobody to run the cases as
            Experiment.objects.filter(pk=experiment_id).update(
                status=ExperimentStatus.FAILED,
                completed_at=Now(),
                lease_until=None,
                error={"message": "the experiment's requester was deleted before it ran"},
            )
            experiment.results.filter(status=ResultStatus.PENDING).update(
                status=ResultStatus.CANCELED
            )
            return None
        if experiment.status == ExperimentStatus.QUEUED:
            experiment.status = ExperimentStatus.RUNNING
            Experiment.objects.filter(pk=experiment_id).update(
                status=ExperimentStatus.RUNNING, started_at=Now()
            )
    return _Setup(experiment, scorers_build(experiment.scorers))


@functools.cache
def _claim_sql() -> str:
    quote = connection.ops.quote_name
    results = quote(ExperimentResult._meta.db_table)
    cases = quote(ExperimentResult._meta.get_field("case").related_model._meta.db_table)
    # Names from the models' metadata; every value is a parameter.
    return f"""
        WITH claimed AS (
            UPDATE {results} r
            SET status = %(running)s, attempts = r.attempts + 1,
                lease_until = STATEMENT_TIMESTAMP() + %(lease)s
            FROM (
                SELECT p.id FROM {results} p
                WHERE p.experiment_id = %(experiment)s AND p.status = %(pending)s
                ORDER BY p.id LIMIT 1
                FOR UPDATE SKIP LOCKED
            ) next
            WHERE r.id = next.id
            RETURNING r.id, r.case_id, r.attempts
        )
        SELECT c.id, c.attempts, d.input, d.expected
        FROM claimed c JOIN {cases} d ON d.id = c.case_id
    """  # noqa: S608


def _claim(experiment_id: uuid.UUID) -> _Item | None:
    params: dict[str, Any] = {
        "experiment": experiment_id,
        "pending": ResultStatus.PENDING.value,
        "running": ResultStatus.RUNNING.value,
        "lease": timedelta(seconds=liveness.lease_seconds()),
    }
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(), params)
        row = cursor.fetchone()
    if row is None:
        return None
    item_id, attempt, case_input, expected = row
    return _Item(item_id, attempt, _json(case_input), _json(expected))


def _json(value: Any) -> Any:
    # psycopg hands jsonb to Django's raw cursors as text.
    return json.loads(value) if isinstance(value, str) else value


def _run_case(setup: _Setup, item: _Item) -> bool:
    """Run, score and record the case; False when the process's runner would not start it
    (the process stops), the case then handed back, pending, unscored."""
    experiment = setup.experiment
    started = _run(experiment, item)
    if started is None:
        ExperimentResult.objects.filter(
            pk=item.id, status=ResultStatus.RUNNING, attempts=item.attempt
        ).update(status=ResultStatus.PENDING, attempts=item.attempt - 1, lease_until=None)
        return False
    run_id, refused = started
    run = None if run_id is None else Run.objects.filter(pk=run_id).first()
    observed = _observed(run, refused, item.case_input)
    expected = expected_of(item.expected)
    scores: dict[str, Score] = {}
    for scorer in setup.scorers:
        score = failed_run(observed) or scorer(expected, observed)
        if score is not None:
            scores[scorer.name] = score
    _record(experiment.pk, item.id, item.attempt, run, observed, scores)
    return True


def _run(experiment: Experiment, item: _Item) -> tuple[uuid.UUID | None, str | None] | None:
    """Run the case to its end in this process's runner: the run's id (None when the call
    was refused before any run existed) and why it was refused; None when the runner did
    not take it (its process is stopping: agentbuilder.shutdown)."""
    request = _request(experiment, item.case_input)
    started: dict[str, Any] = {}

    def claim() -> Invocation | None:
        try:
            invocation = invocation_start(request)
        except (DomainError, Invalid) as exc:  # its run, if any, is recorded failed
            started["run_id"], started["refused"] = getattr(exc, "run_id", None), str(exc)
            return None
        except Exception as exc:  # the database gone, say: the case fails, the slot goes on
            logger.exception("experiment %s: a case could not start", experiment.pk)
            started["refused"] = f"the run could not start: {type(exc).__name__}: {exc}"
            return None
        started["run_id"] = invocation.run_id
        return invocation

    # Back to the pool while the run runs in the runner's threads, which need connections
    # of their own: a worker's slots waiting with theirs would starve its runs.
    connection.close()
    detached.runner().submit(uuid.uuid4(), claim).result()
    if not started:
        return None
    return started.get("run_id"), started.get("refused")


def _request(experiment: Experiment, case_input: dict[str, Any]) -> RunRequest:
    agent = experiment.agent
    assert experiment.requester is not None  # a deleted requester's experiment is failed
    fields: dict[str, Any] = {}
    agent_types: tuple[str, ...]
    if agent.agent_type in TASK_TYPES:
        fields["inputs"], agent_types = case_input.get("inputs", {}), TASK_TYPES
    else:
        body = InvokeRequest.model_validate({"messages": case_input.get("messages", [])})
        fields["messages"], agent_types = runtime_messages(body), CHAT_TYPES
    return RunRequest(
        user=experiment.requester,
        environment=agent.environment,
        agent_id=agent.pk,
        version_ref=str(experiment.version.number),
        protocol=PROTOCOL,
        route="experiment",
        agent_types=agent_types,
        **fields,
    )


def _observed(
    run: Run | None,
    refused: str | None,
    case_input: dict[str, Any],
) -> Observed:
    asked = input_text(case_input)
    if run is None:
        return Observed(answer="", failed=refused or "the run was refused", input_text=asked)
    output = run.output
    sources: list[str] = []
    if isinstance(output, dict) and "customOutputs" in output:
        nodes = (output.get("customOutputs") or {}).get("sourceNodes") or []
        sources = list(dict.fromkeys(str(n.get("docId")) for n in nodes if n.get("docId")))
        output = output.get("answer")
    answer = output if isinstance(output, str) else "" if output is None else json.dumps(output)
    calls = tuple(
        ToolCall(s.get("name", ""), _arguments(s.get("arguments")))
        for s in run.steps or []
        if s.get("type") == "tool_call" and "parent" not in s
    )
    failed = None
    if run.status != RunStatus.COMPLETED:
        error = run.error or {}
        failed = f"{run.status}: {error.get('message') or error.get('code') or run.status}"
    return Observed(
        answer=answer,
        output=output,
        tool_calls=calls,
        source_doc_ids=tuple(sources),
        latency_ms=run.latency_ms,
        # Priced by the run itself, each model call at its model's price (docs/api.md#cost).
        cost_usd=None if run.cost_usd is None else float(run.cost_usd),
        failed=failed,
        input_text=asked,
    )


def _arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _record(
    experiment_id: uuid.UUID,
    item_id: int,
    attempt: int,
    run: Run | None,
    observed: Observed,
    scores: dict[str, Score],
) -> None:
    """The case's scores and the experiment's progress, together; the summary and the end
    with the last case."""
    passed = all(s.passed for s in scores.values()) if scores else None
    with transaction.atomic():
        # A slot slow enough to lose its lease finds its case claimed again (a later
        # attempt): the later claim's scores count, never both.
        mine = ExperimentResult.objects.filter(
            pk=item_id, status=ResultStatus.RUNNING, attempts=attempt
        )
        recorded = mine.update(
            status=ResultStatus.SCORED,
            run=run,
            answer=observed.answer,
            tool_calls=[{"name": c.name, "arguments": c.arguments} for c in observed.tool_calls],
            scores={name: s.as_json() for name, s in scores.items()},
            passed=passed,
            latency_ms=observed.latency_ms,
            tokens_usage=(run.tokens_usage if run is not None else {}) or {},
            cost_usd=None if observed.cost_usd is None else Decimal(str(observed.cost_usd)),
            error=None if observed.failed is None else {"message": observed.failed},
            lease_until=None,
        )
        if not recorded:  # canceled, or taken for lost and handed over meanwhile
            return
        _progressed(experiment_id)


def _progressed(experiment_id: uuid.UUID) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {connection.ops.quote_name(Experiment._meta.db_table)} "  # noqa: S608
            "SET done = done + 1 WHERE id = %s RETURNING done, total, status",
            [experiment_id],
        )
        done, total, status = cursor.fetchone()
    if done >= total and status == ExperimentStatus.RUNNING:
        experiment_summarize(experiment_id, end=ExperimentStatus.COMPLETED)
    elif status == ExperimentStatus.CANCELED:
        experiment_summarize(experiment_id)


def experiment_summarize(experiment_id: uuid.UUID, end: str | None = None) -> None:
    """Write the experiment's summary from its scored cases (and end it `end`)."""
    rows = list(
        ExperimentResult.objects.filter(
            experiment_id=experiment_id, status=ResultStatus.SCORED
        ).values_list("scores", "passed", "latency_ms", "tokens_usage", "cost_usd", "error")
    )
    update: dict[str, Any] = {"summary": summary_of(rows)}
    if end is not None:
        update |= {"status": end, "completed_at": Now(), "lease_until": None}
        ended = Experiment.objects.filter(pk=experiment_id, status=ExperimentStatus.RUNNING)
        if ended.update(**update):
            experiment_announce(experiment_id)
    else:
        Experiment.objects.filter(pk=experiment_id).update(**update)


def experiment_announce(experiment_id: uuid.UUID) -> None:
    """`experiment.completed` to the agent's webhooks that subscribe to it, once, whatever
    ended it (`data.status` says how): a delivery each, sent and retried as a run's are
    (agents.webhooks.delivery), its payload fixed now."""
    experiment = (
        Experiment.objects.select_related("agent", "version").filter(pk=experiment_id).first()
    )
    if experiment is None:
        return
    hooks = AgentWebhook.objects.filter(
        agent_id=experiment.agent_id,
        enabled=True,
        events__contains=[WebhookEvent.EXPERIMENT_COMPLETED.value],
    )
    if not hooks.exists():
        return
    event = WebhookEvent.EXPERIMENT_COMPLETED.value
    at = (experiment.completed_at or timezone.now()).isoformat().replace("+00:00", "Z")
    # Here, not at the top: agents.evals.experiments imports this module.
    from agents.evals.experiments import experiment_json

    data = json.loads(json.dumps(experiment_json(experiment), cls=DjangoJSONEncoder))
    payload = {"type": event, "timestamp": at, "data": data}
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                key=f"{experiment.pk}:{event}:agent:{hook.pk}",
                environment_id=experiment.agent.environment_id,
                agent_webhook=hook,
                event=event,
                format=DeliveryFormat.STANDARD,
                url=hook.url,
                payload=payload,
                next_attempt_at=timezone.now(),
            )
            for hook in hooks
        ],
        ignore_conflicts=True,  # announced once, whoever ends it
    )
    webhooks_dispatch.wake()


# ---------------------------------------------------------------- leases and sweep


def _renew_experiments(ids: Any) -> None:
    Experiment.objects.filter(
        pk__in=list(ids), status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING]
    ).update(lease_until=liveness.lease_expiry())


def _renew_results(ids: Any) -> None:
    ExperimentResult.objects.filter(pk__in=list(ids), status=ResultStatus.RUNNING).update(
        lease_until=liveness.lease_expiry()
    )


def experiments_sweep() -> None:
    """Cases whose slot died: run again, or (their second time) scored as failed; then
    experiments with cases left and no live slot: handed to workers again."""
    lapsed = ExperimentResult.objects.filter(status=ResultStatus.RUNNING, lease_until__lt=Now())
    again = lapsed.filter(attempts__lt=MAX_ATTEMPTS)
    rerun = set(again.values_list("experiment_id", flat=True))
    again.update(status=ResultStatus.PENDING, lease_until=None)
    if rerun:
        # Handed over in this pass: their experiments' own lease may have lapsed a pass
        # before (its slots then found nothing pending, and it was leased for a queue's
        # wait), so the cases would otherwise wait out RUN_QUEUE_LEASE_SECONDS.
        Experiment.objects.filter(
            pk__in=rerun, status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING]
        ).update(lease_until=timezone.now() - timedelta(seconds=1))
    interrupted = Observed(answer="", failed=INTERRUPTED)
    given_up = lapsed.filter(attempts__gte=MAX_ATTEMPTS).values_list(
        "pk", "attempts", "experiment_id", "experiment__scorers"
    )
    for item_id, attempt, experiment_id, specs in given_up:
        failed = failed_run(interrupted)
        assert failed is not None
        scores = {scorer.name: failed for scorer in scorers_build(specs)}
        _record(experiment_id, item_id, attempt, None, interrupted, scores)
    with transaction.atomic():
        stalled = list(
            Experiment.objects.select_for_update(skip_locked=True).filter(
                status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING],
                lease_until__lt=Now(),
            )[:100]
        )
        for experiment in stalled:
            experiment.lease_until = _queue_lease()
        Experiment.objects.bulk_update(stalled, ["lease_until"])
    for experiment in stalled:
        if experiment.results.filter(status=ResultStatus.PENDING).exists():
            logger.info("experiment %s: no live slot, cases left: handed over again", experiment.pk)
            experiment_dispatch(experiment)
        elif not experiment.results.filter(status=ResultStatus.RUNNING).exists():
            experiment_summarize(experiment.pk, end=ExperimentStatus.COMPLETED)


def _queue_lease() -> Any:
    return timezone.now() + timedelta(seconds=float(settings.RUN_QUEUE_LEASE_SECONDS))
