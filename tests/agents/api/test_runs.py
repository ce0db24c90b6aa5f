"""Run records of invocations (docs/api.md#runs): filters, and who may see them."""

from __future__ import annotations

from typing import Any

from agents.access.permissions import Action, grant
from agents.models import Run
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.native import REVIEW_TASK, invoke

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
INPUTS = {"product": "Acme kettle", "review": "Boils in 2 minutes, very positive."}


def run_ids(client: Any, **query: str) -> set[str]:
    got = client.get("/v1/runs", query)
    assert got.status_code == 200, got.json()
    return {run["id"] for run in got.json()["runs"]}


def test_runs_list_filters_by_agent_and_status(owner_client: Any, make_agent: Any) -> None:
    calc = make_agent("Calculator")
    task = make_agent("ReviewRater", "task", config=REVIEW_TASK)
    calc_runs = {
        invoke(owner_client, calc, "invoke", ASK).run_id,
        invoke(owner_client, calc, "invoke-stream", ASK).run_id,
    }
    task_done = invoke(owner_client, task, "invoke-task", {"inputs": INPUTS}).run_id
    refused = invoke(owner_client, task, "invoke-task-stream", {"inputs": {"product": "x"}})
    assert refused.status == 400
    [task_failed] = [str(r.pk) for r in Run.objects.filter(agent=task, status="failed")]

    assert run_ids(owner_client, agentId=str(calc.pk)) == calc_runs
    assert run_ids(owner_client, agentId=str(task.pk)) == {task_done, task_failed}
    assert run_ids(owner_client, agentId=str(task.pk), status="failed") == {task_failed}
    assert run_ids(owner_client, agentId=str(task.pk), status="completed") == {task_done}
    assert run_ids(owner_client, status="completed") == {*calc_runs, task_done}
    assert run_ids(owner_client, agentId=str(calc.pk), status="failed") == set()
    assert run_ids(owner_client, status="canceled") == set()


def test_failed_run_keeps_its_error(owner_client: Any, make_agent: Any) -> None:
    task = make_agent("ReviewRater", "task", config=REVIEW_TASK)

    invoke(owner_client, task, "invoke-task", {"inputs": {"product": "x"}})

    [run] = Run.objects.filter(agent=task)
    got = owner_client.get(f"/v1/runs/{run.pk}").json()
    assert got["status"] == "failed"
    assert got["error"]["code"]
    assert "review" in got["error"]["message"]
    assert got["completedAt"] is not None


def test_stranger_gets_404_for_a_run(owner_client: Any, stranger: Any, make_agent: Any) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke", ASK)
    outsider = client_for(stranger)

    got = outsider.get(f"/v1/runs/{answer.run_id}")

    assert got.status_code == 404
    assert set(got.json()) == {"detail"}
    assert run_ids(outsider) == set()


def test_auditor_of_one_agent_sees_only_its_runs(
    owner_client: Any, make_agent: Any, env: Any
) -> None:
    calc, other = make_agent("Calculator"), make_agent("Other")
    mine = invoke(owner_client, calc, "invoke", ASK).run_id
    theirs = invoke(owner_client, other, "invoke", ASK).run_id
    auditor = UserFactory(username="collaborator")
    grant(auditor, Action.READ, calc)
    grant(auditor, Action.AUDIT, calc)
    client = client_for(auditor)

    assert client.get(f"/v1/runs/{mine}").status_code == 200
    assert client.get(f"/v1/runs/{theirs}").status_code == 404
    assert run_ids(client) == {mine}


def test_run_of_a_streamed_call_records_the_turn(owner_client: Any, make_agent: Any) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke-stream", ASK)

    run = owner_client.get(f"/v1/runs/{answer.run_id}").json()

    assert run["status"] == "completed"
    assert run["protocol"] == "native"
    assert run["tokensUsage"] == answer.lines[-1]["response"]["usage"]
    assert [m["role"] for m in run["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert run["messages"][-1]["content"] == answer.text
    assert run["output"] == answer.text
    assert run["threadId"] is None


def _in_progress(agent: Any, caller: Any) -> Run:
    """A run row as a live one stands (no process runs it here: the cancel is only asked)."""
    return Run.objects.create(
        agent=agent,
        version=agent.versions.get(number=1),
        caller=caller,
        protocol="native",
        response_id="response_test",
        messages=[],
    )


def test_the_caller_or_an_auditor_asks_a_run_in_progress_to_stop(
    owner: Any, owner_client: Any, make_agent: Any
) -> None:
    calc = make_agent("Calculator")
    run = _in_progress(calc, owner)

    asked = owner_client.post(f"/v1/runs/{run.pk}/cancel")

    assert asked.status_code == 202, asked.json()
    assert (asked.json()["id"], asked.json()["status"]) == (str(run.pk), "in_progress")
    run.refresh_from_db()
    first = run.cancel_requested_at
    assert first is not None
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, calc)
    assert client_for(auditor).post(f"/v1/runs/{run.pk}/cancel").status_code == 202
    run.refresh_from_db()
    assert run.cancel_requested_at == first  # asked once: the first ask's time stands
    invoker = UserFactory(username="invoker")  # may invoke the agent, but the run is not its
    grant(invoker, Action.INVOKE, calc)
    assert client_for(invoker).post(f"/v1/runs/{run.pk}/cancel").status_code == 404


def test_a_run_that_has_ended_cannot_be_canceled(owner_client: Any, make_agent: Any) -> None:
    done = invoke(owner_client, make_agent("Calculator"), "invoke", ASK)

    refused = owner_client.post(f"/v1/runs/{done.run_id}/cancel")

    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        f"Run '{done.run_id}' has ended (completed): it cannot be canceled."
    )
    run = Run.objects.get(pk=done.run_id)
    assert (run.status, run.cancel_requested_at) == ("completed", None)


def test_cancel_of_a_run_the_caller_may_not_see_is_a_404(
    owner: Any, owner_client: Any, stranger: Any, make_agent: Any
) -> None:
    run = _in_progress(make_agent("Calculator"), owner)

    assert client_for(stranger).post(f"/v1/runs/{run.pk}/cancel").status_code == 404
    unknown = owner_client.post("/v1/runs/00000000-0000-4000-8000-000000000000/cancel")
    assert unknown.status_code == 404
    bad = owner_client.post("/v1/runs/nope/cancel")
    assert bad.status_code == 400
    assert [item["loc"] for item in bad.json()["detail"]] == [["path", "runId"]]
    run.refresh_from_db()
    assert run.cancel_requested_at is None
