"""Run records of invocations (docs/api.md#runs): filters, and who may see them."""

from __future__ import annotations

from typing import Any

import pytest

from agents.access.permissions import Action, grant
from agents.models import Run, RunEvent
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.native import REVIEW_TASK, invoke
from tests.support.run_events import body_of, ndjson_lines, sse_events

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


# ---------------------------------------------------------------- events (docs/api.md#run-events)


def events(client: Any, run_id: str, query: str = "", **headers: str) -> Any:
    return client.get(f"/v1/runs/{run_id}/events{query}", headers=headers)


def test_events_of_a_streamed_run_are_its_stream_lines_each_with_its_index(
    owner_client: Any, make_agent: Any
) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke-stream", ASK)

    got = events(owner_client, answer.run_id)

    assert got.status_code == 200
    assert got["Content-Type"] == "application/x-ndjson"
    assert (got["Cache-Control"], got["X-Accel-Buffering"]) == ("no-cache", "no")
    lines = ndjson_lines(body_of(got))
    # The lines invoke-stream wrote, in order, with the index of each stored event (the
    # tool's result, which the stream does not show, has an index of its own).
    assert [{k: v for k, v in line.items() if k != "index"} for line in lines] == answer.lines
    indexes = [line["index"] for line in lines]
    stored = RunEvent.objects.filter(run_id=answer.run_id)
    kinds = dict(stored.values_list("index", "event__type"))
    assert indexes == sorted(i for i, kind in kinds.items() if kind != "tool_result")
    assert len(kinds) == len(indexes) + 1  # one tool result


def test_events_replay_from_an_index_with_the_response_id_of_the_first(
    owner_client: Any, make_agent: Any
) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke", ASK)
    whole = ndjson_lines(body_of(events(owner_client, answer.run_id)))

    from_three = ndjson_lines(body_of(events(owner_client, answer.run_id, "?after=3")))
    past_the_end = ndjson_lines(body_of(events(owner_client, answer.run_id, "?after=99")))

    assert from_three == [line for line in whole if line["index"] >= 3]
    assert from_three[0]["id"] == whole[0]["response"]["id"]  # read from the first event
    assert whole[-1]["type"] == "response.completed"  # a run not streamed has its events too
    assert past_the_end == []  # after its terminal event: nothing more to say


def test_events_as_sse_carry_their_index_as_id_and_resume_after_the_last_event_id(
    owner_client: Any, make_agent: Any
) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke-stream", ASK)
    sse = {"Accept": "text/event-stream"}

    got = events(owner_client, answer.run_id, **sse)
    resumed = events(owner_client, answer.run_id, "?after=0", **sse, **{"Last-Event-ID": "2"})

    assert got["Content-Type"] == "text/event-stream"
    whole = sse_events(body_of(got))
    assert [data for _, data in whole] == ndjson_lines(body_of(events(owner_client, answer.run_id)))
    assert [event_id for event_id, _ in whole] == [str(data["index"]) for _, data in whole]
    # The next event after that id; the header wins over `after`.
    assert sse_events(body_of(resumed)) == [(i, data) for i, data in whole if int(i or 0) > 2]


def test_events_of_a_canceled_run_end_with_a_line_that_says_so(
    owner: Any, owner_client: Any, make_agent: Any
) -> None:
    run = _in_progress(make_agent("Calculator"), owner)
    created = {"type": "response_created", "response_id": "resp_1", "model": "m", "created_at": 1}
    RunEvent.objects.create(run=run, index=0, event=created)
    RunEvent.objects.create(run=run, index=1, event={"type": "text_delta", "text": "Count"})
    Run.objects.filter(pk=run.pk).update(status="canceled")

    lines = ndjson_lines(body_of(events(owner_client, str(run.pk))))
    resumed = ndjson_lines(body_of(events(owner_client, str(run.pk), "?after=2")))

    assert [line.get("index") for line in lines] == [0, 1, None]
    assert lines[-1]["type"] == "response.failed"
    assert lines[-1]["response"]["id"] == "resp_1"
    assert lines[-1]["response"]["error"]["code"] == "canceled"
    assert resumed == lines[-1:]  # how it ended, whatever the start


def test_events_of_an_interrupted_run_end_with_its_error(
    owner: Any, owner_client: Any, make_agent: Any
) -> None:
    run = _in_progress(make_agent("Calculator"), owner)
    error = {"code": "interrupted", "message": "the server process stopped"}
    Run.objects.filter(pk=run.pk).update(status="failed", error=error)

    lines = ndjson_lines(body_of(events(owner_client, str(run.pk))))

    assert [line["type"] for line in lines] == ["response.failed"]
    assert lines[0]["response"]["error"] == error
    assert "index" not in lines[0]


def test_events_are_the_callers_own_or_an_auditors(
    owner_client: Any, stranger: Any, make_agent: Any
) -> None:
    calc = make_agent("Calculator")
    answer = invoke(owner_client, calc, "invoke", ASK)
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.AUDIT, calc)
    invoker = UserFactory(username="invoker")
    grant(invoker, Action.INVOKE, calc)

    assert events(client_for(stranger), answer.run_id).status_code == 404
    assert events(client_for(invoker), answer.run_id).status_code == 404
    audited = events(client_for(auditor), answer.run_id)
    assert audited.status_code == 200
    assert ndjson_lines(body_of(audited))[-1]["type"] == "response.completed"
    unknown = events(owner_client, "00000000-0000-4000-8000-000000000000")
    assert (unknown.status_code, set(unknown.json())) == (404, {"detail"})


@pytest.mark.parametrize(
    ("query", "headers", "loc"),
    [
        ("?after=x", {}, ["query", "after"]),
        ("?after=-1", {}, ["query", "after"]),
        ("?after=1.5", {}, ["query", "after"]),
        ("?after=99999999999", {}, ["query", "after"]),
        ("", {"Last-Event-ID": "x"}, ["header", "Last-Event-ID"]),
        ("", {"Last-Event-ID": "-1"}, ["header", "Last-Event-ID"]),
        ("", {"Last-Event-ID": "9" * 5000}, ["header", "Last-Event-ID"]),
    ],
)
def test_a_bad_start_is_a_400_at_its_path(
    owner_client: Any, make_agent: Any, query: str, headers: dict[str, str], loc: list[str]
) -> None:
    answer = invoke(owner_client, make_agent("Calculator"), "invoke", ASK)

    # As a streaming client asks: the refusal is JSON all the same.
    got = events(owner_client, answer.run_id, query, Accept="text/event-stream", **headers)

    assert got.status_code == 400
    assert got["Content-Type"] == "application/json"
    assert [item["loc"] for item in got.json()["detail"]] == [loc]


def test_events_of_a_bad_run_id_are_a_400_at_the_path(owner_client: Any) -> None:
    got = events(owner_client, "nope")

    assert got.status_code == 400
    assert [item["loc"] for item in got.json()["detail"]] == [["path", "runId"]]
