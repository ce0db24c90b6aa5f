"""Experiments run (agents/evals/runner.py): every case through the run path as the
requester's `eval` run, scored, the progress counted, the summary written with the last
case; slots that died are taken over by the sweep."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone

from agentbuilder import shutdown
from agents.access.permissions import Action, grant
from agents.evals import runner
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.services import cases_add, dataset_create
from agents.models import (
    Agent,
    AgentWebhook,
    Experiment,
    ExperimentResult,
    LLMModel,
    Run,
    WebhookDelivery,
)
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Turn
from tests.live import (  # noqa: F401 (the fixtures counter, model, not_sweeping_here, token)
    counter_agent,
    fake_model,
    not_sweeping_here,
    owner_token,
    server_on,
)
from tests.support.backends import openai_server  # noqa: F401
from tests.support.processes import free_port, start_redis, start_worker, stop
from tests.support.rag import corpus, rag_agent  # noqa: F401 (the fixture corpus)

pytestmark = [
    # The cases' runs run in this process's runner threads, which see committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


@pytest.fixture
def member(env: Any) -> Any:
    user = UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(user, action, env)
    return user


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


def test_an_experiment_runs_every_case_as_the_requesters_eval_run_and_scores_it(
    calc: Agent, member: Any, env: Any
) -> None:
    dataset = dataset_create(user=member, environment=env, name="arith", agent_type="tool")
    cases_add(
        user=member,
        dataset=dataset,
        cases=[
            {
                "input": "What is 12 times 11?",
                "expected": {"output": "The result of multiply(12, 11) is 132."},
            },
            {"input": "What is 2 plus 2?", "expected": {"output": "5"}},
        ],
    )
    spec = ExperimentSpec(version="latest", scorers=["exact"], repetitions=2, concurrency=2)

    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )
    runner.experiment_run_here(experiment)

    experiment.refresh_from_db()
    assert (experiment.status, experiment.done, experiment.total) == ("completed", 4, 4)
    results = list(ExperimentResult.objects.filter(experiment=experiment))
    runs = Run.objects.filter(pk__in=[r.run_id for r in results])
    assert {(r.caller, r.protocol, r.status) for r in runs} == {(member, "eval", "completed")}
    assert len(runs) == 4
    assert [r.passed for r in results] == [True, True, False, False]
    assert results[2].scores["exact"]["passed"] is False
    assert experiment.summary["scorers"]["exact"] == {"mean": 0.5, "passRate": 0.5, "cases": 4}
    assert experiment.summary["passRate"] == 0.5


# ---------------------------------------------------------------- Redis and Celery workers

PATIENCE = 600.0  # only so that a broken experiment fails rather than hangs the suite


@contextmanager
def broker(tmp_path: Path) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    redis = start_redis(port := free_port(), tmp_path)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(redis)


def worker(url: str, log: Path, model: FakeOpenAI, name: str, **env: str) -> Any:
    fake = {"LLM_OFFLINE": "false", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    return start_worker(
        url, log, pool="threads", concurrency=8, name=name, LIVENESS_THREAD="true", **fake, **env
    )


def counter_experiment(port: int, token: str, counter: Agent, env: Any, cases: int) -> str:
    """An experiment of the Counter on `cases` cases, started through the server."""
    dataset = dataset_create(user=counter.created_by, environment=env, name="d", agent_type="tool")
    cases_add(
        user=counter.created_by,
        dataset=dataset,
        cases=[{"input": f"Count {i}", "expected": {"output": "Fifteen."}} for i in range(cases)],
    )
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        started = http.post(
            f"http://127.0.0.1:{port}/v1/experiments",
            json={
                "agentId": str(counter.pk),
                "datasetId": str(dataset.pk),
                "scorers": ["exact"],
                "concurrency": 4,
            },
        )
    assert started.status_code == 202, started.text
    return str(started.json()["id"])


def ended(experiment_id: str, logs: list[Path]) -> Experiment:
    deadline = time.monotonic() + PATIENCE
    while (experiment := Experiment.objects.get(pk=experiment_id)).status not in (
        "completed",
        "failed",
        "canceled",
    ):
        assert time.monotonic() < deadline, [log.read_text(errors="replace") for log in logs]
        time.sleep(0.1)
    return experiment


@pytest.mark.usefixtures("not_sweeping_here")
def test_an_experiment_goes_through_redis_to_celery_workers(
    model: FakeOpenAI, counter: Agent, token: str, env: Any, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Fifteen."], delay=0.05)
    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url) as server,
    ):
        workers = [worker(url, log, model, log.stem) for log in logs]
        try:
            experiment_id = counter_experiment(server.port, token, counter, env, 20)
            experiment = ended(experiment_id, logs)
        finally:
            for process in workers:
                stop(process)

    assert (experiment.status, experiment.done, experiment.total) == ("completed", 20, 20)
    failed = ExperimentResult.objects.filter(experiment=experiment, passed=False)
    assert not failed.exists(), [(r.answer, r.error) for r in failed]
    ran = "".join(log.read_text(errors="replace") for log in logs)
    assert ran.count("agents.experiment_slot") >= 4, ran  # its four slots, as tasks
    assert "Traceback" not in ran


@pytest.mark.usefixtures("not_sweeping_here")
def test_a_worker_killed_mid_experiment_leaves_it_to_finish_elsewhere(
    model: FakeOpenAI, counter: Agent, token: str, env: Any, tmp_path: Path
) -> None:
    model.fallback = Turn(text=["Fifteen."], delay=1.0)
    liveness = {"LIVENESS_SECONDS": "15"}
    logs = [tmp_path / "killed.log", tmp_path / "spare.log"]
    runs = Run.objects.filter(protocol="eval")
    with (
        broker(tmp_path) as url,
        server_on(model, tmp_path / "server.log", CELERY_BROKER_URL=url, **liveness) as server,
    ):
        killed = worker(url, logs[0], model, "killed", **liveness)
        try:
            experiment_id = counter_experiment(server.port, token, counter, env, 12)
            deadline = time.monotonic() + PATIENCE
            # A case under way: its run waits a second on the model.
            while not runs.filter(status="in_progress").exists():
                assert time.monotonic() < deadline, logs[0].read_text(errors="replace")
                time.sleep(0.05)
            killed.kill()  # SIGKILL mid-case: no shutdown, its slots and cases left leased
            killed.wait()
            spare = worker(url, logs[1], model, "spare", **liveness)
            experiment = ended(experiment_id, logs)
            while runs.filter(status="in_progress").exists():  # the killed runs, swept
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            stop(killed)
            stop(spare)

    assert (experiment.status, experiment.done, experiment.total) == ("completed", 12, 12)
    results = ExperimentResult.objects.filter(experiment=experiment)
    assert set(results.values_list("status", flat=True)) == {"scored"}
    assert results.filter(attempts=2).exists()  # the cases the killed worker had: run again
    assert all(r.passed for r in results), [(r.answer, r.error, r.attempts) for r in results]
    interrupted = runs.filter(status="failed")
    assert interrupted.exists()
    assert {r.error["code"] for r in interrupted} == {"interrupted"}


def test_an_experiments_end_is_announced_to_the_agents_webhooks_once(
    calc: Agent, member: Any, env: Any
) -> None:
    hook = AgentWebhook.objects.create(
        agent=calc, url="http://127.0.0.1:9/hook", events=["experiment.completed"]
    )
    AgentWebhook.objects.create(agent=calc, url="http://127.0.0.1:9/runs", events=["run.failed"])
    dataset = dataset_create(user=member, environment=env, name="one", agent_type="tool")
    cases_add(user=member, dataset=dataset, cases=[{"input": "What is 2 times 3?"}])
    spec = ExperimentSpec(version="1", scorers=["exact"])
    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )

    runner.experiment_run_here(experiment)
    runner.experiment_announce(experiment.pk)  # a second end (a sweep's, say): no second event

    [delivery] = WebhookDelivery.objects.filter(event="experiment.completed")
    assert (delivery.agent_webhook, delivery.run, delivery.url) == (hook, None, hook.url)
    assert delivery.payload["type"] == "experiment.completed"
    assert delivery.payload["data"]["id"] == str(experiment.pk)
    assert delivery.payload["data"]["status"] == "completed"
    assert delivery.payload["data"]["progress"] == {"done": 1, "total": 1}


def test_a_priced_models_runs_cost_what_their_tokens_cost(
    calc: Agent, member: Any, env: Any
) -> None:
    LLMModel.objects.filter(pk="local.demo-v1").update(
        input_usd_per_mtok=Decimal("3"), output_usd_per_mtok=Decimal("15")
    )
    dataset = dataset_create(user=member, environment=env, name="priced", agent_type="tool")
    cases_add(user=member, dataset=dataset, cases=[{"input": "What is 2 times 3?"}] * 2)
    spec = ExperimentSpec(version="1", scorers=[{"name": "max_cost_usd", "max": 1}])
    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )

    runner.experiment_run_here(experiment)

    experiment.refresh_from_db()
    costs = []
    for result in ExperimentResult.objects.filter(experiment=experiment).select_related("run"):
        usage = result.run.tokens_usage
        expected = (usage["input_tokens"] * 3 + usage["output_tokens"] * 15) / 1_000_000
        assert float(result.cost_usd) == pytest.approx(expected)
        assert result.scores["max_cost_usd"]["passed"] is True
        costs.append(expected)
    assert experiment.summary["costUsd"] == pytest.approx(sum(costs))
    assert sum(costs) > 0


def test_a_rag_agents_sources_are_scored_from_its_runs_source_nodes(
    make_agent: Callable[..., Agent],
    member: Any,
    env: Any,
    corpus: Any,  # noqa: F811 (the fixture)
) -> None:
    helper = rag_agent(make_agent)
    handbook = str(corpus["handbook"].pk)
    never = "00000000-0000-4000-8000-000000000000"  # no document of the environment
    dataset = dataset_create(user=member, environment=env, name="sources", agent_type="rag")
    question = "How many days of paid vacation does an employee earn per year?"
    cases_add(
        user=member,
        dataset=dataset,
        cases=[
            {"input": question, "expected": {"sourceDocIds": [handbook]}},
            {"input": question, "expected": {"sourceDocIds": [handbook, never]}},
        ],
    )
    spec = ExperimentSpec(version="1", scorers=["source_recall"])
    experiment = experiment_start(
        user=member, agent=helper, dataset=dataset, spec=spec, dispatch=False
    )

    runner.experiment_run_here(experiment)

    found, missed = ExperimentResult.objects.filter(experiment=experiment)
    assert found.scores["source_recall"]["passed"] is True
    assert missed.scores["source_recall"]["score"] == 0.5
    assert missed.scores["source_recall"]["passed"] is False
    assert "25 days" in found.answer


def test_a_case_the_stopping_process_will_not_start_goes_back_unscored(
    calc: Agent, member: Any, env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = dataset_create(user=member, environment=env, name="later", agent_type="tool")
    cases_add(user=member, dataset=dataset, cases=[{"input": "What is 2 times 3?"}])
    spec = ExperimentSpec(version="1", scorers=["exact"])
    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )
    with monkeypatch.context() as stopping:
        stopping.setattr(shutdown, "stopping", lambda: True)  # a SIGTERM received

        assert runner.slot_run(experiment.pk) == 0

    [result] = ExperimentResult.objects.filter(experiment=experiment)
    assert (result.status, result.attempts, result.scores) == ("pending", 0, {})
    assert not Run.objects.filter(protocol="eval").exists()
    runner.experiment_run_here(experiment)  # another process, say: it runs the case
    experiment.refresh_from_db()
    assert (experiment.status, experiment.done) == ("completed", 1)


def test_a_case_handed_back_by_the_sweep_is_run_again_at_once(
    calc: Agent, member: Any, env: Any
) -> None:
    dataset = dataset_create(user=member, environment=env, name="swept", agent_type="tool")
    cases_add(user=member, dataset=dataset, cases=[{"input": "What is 2 times 3?"}])
    spec = ExperimentSpec(version="1", scorers=["exact"])
    experiment = experiment_start(
        user=member, agent=calc, dataset=dataset, spec=spec, dispatch=False
    )
    # As a dead worker leaves it: its case claimed, its lease lapsed; the experiment leased
    # for a queue's wait by a pass that found nothing pending yet.
    past = timezone.now() - timedelta(seconds=5)
    ExperimentResult.objects.filter(experiment=experiment).update(
        status="running", attempts=1, lease_until=past
    )
    Experiment.objects.filter(pk=experiment.pk).update(
        status="running", lease_until=timezone.now() + timedelta(hours=1)
    )

    runner.experiments_sweep()

    give_up = time.monotonic() + PATIENCE  # the case runs in this process's slot threads
    while (done := Experiment.objects.get(pk=experiment.pk)).status == "running":
        assert time.monotonic() < give_up, "the case handed back was never run again"
        time.sleep(0.05)
    assert (done.status, done.done) == ("completed", 1)
    [result] = ExperimentResult.objects.filter(experiment=experiment)
    assert (result.status, result.attempts) == ("scored", 2)
