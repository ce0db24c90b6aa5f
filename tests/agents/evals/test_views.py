"""Evaluations through the API (agents/evals/api_datasets.py, api_experiments.py):
datasets and their revisions, feedback, experiments run by the server's slots through the
run path, compare, and an alias whose gate refuses a version that fails its dataset, then
lets a good one through."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from agentbuilder.errors import Invalid
from agents.access.permissions import Action, grant
from agents.evals.services import dataset_create
from agents.models import (
    Agent,
    AliasChange,
    Dataset,
    DatasetCase,
    Experiment,
    ExperimentResult,
    Run,
    RunFeedback,
)
from agents.services.versions import version_add
from tests.conftest import client_for
from tests.factories import CALCULATOR_CONFIG, UserFactory
from tests.support.evals import experiment_ended

pytestmark = [
    # The cases' runs run in the server's slot and runner threads: committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]

ANSWER = "The result of multiply(12, 11) is 132."
# Version 2 lost its multiply tool: the offline model works the product out itself, and
# says so in other words.
NO_TOOLS = {
    **CALCULATOR_CONFIG,
    "tools": [{"toolType": "function", "name": "add", "description": "Adds", "funcName": "add"}],
}


@pytest.fixture
def member(env: Any) -> Any:
    user = UserFactory(username="member")
    for action in (Action.READ, Action.CREATE, Action.EDIT, Action.INVOKE, Action.DELETE):
        grant(user, action, env)
    return user


@pytest.fixture
def api(member: Any) -> APIClient:
    return client_for(member)


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


def _dataset(api: APIClient, name: str = "arith", agent_type: str = "tool") -> dict[str, Any]:
    response = api.post("/v1/datasets", {"name": name, "agentType": agent_type}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _add(api: APIClient, dataset_id: str, cases: list[Any]) -> Any:
    return api.post(f"/v1/datasets/{dataset_id}/cases", cases, format="json")


ARITH = [
    {"input": "What is 12 times 11?", "expected": {"output": ANSWER, "contains": ["132"]}},
    {
        "input": {"messages": [{"role": "user", "content": "What is 12 times 11?"}]},
        "expected": {"toolCalls": [{"name": "multiply", "arguments": {"a": 12, "b": 11}}]},
    },
]


def test_a_dataset_is_made_and_every_change_of_its_cases_is_a_new_revision(
    api: APIClient, member: Any
) -> None:
    dataset = _dataset(api)
    assert dataset["revision"] == 0
    assert (
        api.post("/v1/datasets", {"name": "ARITH", "agentType": "tool"}, format="json").status_code
        == 409
    )

    added = _add(api, dataset["id"], ARITH)
    assert added.status_code == 201, added.content
    assert added.json() == {"revision": 1, "added": 2}
    lines = "\n".join(json.dumps(c) for c in ARITH[:1]) + "\n\n"
    more = api.generic(
        "POST", f"/v1/datasets/{dataset['id']}/cases", lines, content_type="application/jsonl"
    )
    assert more.json() == {"revision": 2, "added": 1}

    cases = api.get(f"/v1/datasets/{dataset['id']}/cases").json()
    assert (cases["revision"], len(cases["cases"])) == (2, 3)
    first = cases["cases"][0]
    assert first["input"] == {"messages": [{"role": "user", "content": "What is 12 times 11?"}]}
    replaced = api.put(
        f"/v1/datasets/{dataset['id']}/cases/{first['id']}",
        {"input": "What is 3 times 4?", "expected": {"contains": ["12"]}},
        format="json",
    )
    assert replaced.status_code == 200, replaced.content
    removed = api.post(
        f"/v1/datasets/{dataset['id']}/cases/remove",
        {"caseIds": [cases["cases"][1]["id"]]},
        format="json",
    )
    assert removed.json()["revision"] == 4

    now = api.get(f"/v1/datasets/{dataset['id']}/cases").json()
    assert [c["position"] for c in now["cases"]] == [1, 3]
    assert now["cases"][0]["input"]["messages"][0]["content"] == "What is 3 times 4?"
    then = api.get(f"/v1/datasets/{dataset['id']}/cases?revision=2").json()
    assert [c["id"] for c in then["cases"]] == [c["id"] for c in cases["cases"]]


@pytest.mark.parametrize(
    ("case", "loc"),
    [
        ({"input": {"inputs": {"text": "x"}}}, [0, "input", "inputs"]),
        ({"input": "hi", "expected": {"regex": "(unclosed"}}, [0, "expected", "regex"]),
        ({"input": "hi", "expected": {"regex": "(a+)+\\1"}}, [0, "expected", "regex"]),
        (
            {"input": "hi", "expected": {"outputSchema": {"type": "nonsense"}}},
            [0, "expected", "outputSchema", "type"],
        ),
        (
            {"input": "hi", "expected": {"toolCallsOrder": "sometimes"}},
            [0, "expected", "toolCallsOrder"],
        ),
        ({"input": "hi", "expected": {"sourceDocIds": ["d"]}}, [0, "expected", "sourceDocIds"]),
        ({"input": "hi", "unknown": 1}, [0, "unknown"]),
    ],
)
def test_a_bad_case_is_refused_at_its_path_and_nothing_is_added(
    api: APIClient, case: dict[str, Any], loc: list[Any]
) -> None:
    dataset = _dataset(api)

    response = _add(api, dataset["id"], [ARITH[0], case])

    assert response.status_code == 400
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", 1, *loc[1:]], error
    assert DatasetCase.objects.count() == 0
    assert Dataset.objects.get().revision == 0


def test_more_than_10000_cases_in_one_call_are_refused(api: APIClient) -> None:
    dataset = _dataset(api)

    response = _add(api, dataset["id"], [{"input": "hi"}] * 10_001)

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"] == ["body"]
    assert "10,000" in response.json()["detail"][0]["msg"]
    assert DatasetCase.objects.count() == 0


def test_datasets_are_their_environments_and_need_its_permissions(api: APIClient, env: Any) -> None:
    dataset = _dataset(api)
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)
    stranger = client_for(UserFactory(username="nobody"))

    assert stranger.get(f"/v1/datasets/{dataset['id']}").status_code == 404
    assert client_for(reader).get(f"/v1/datasets/{dataset['id']}").status_code == 200
    assert _add(client_for(reader), dataset["id"], ARITH).status_code == 403
    assert client_for(reader).delete(f"/v1/datasets/{dataset['id']}").status_code == 403
    assert api.delete(f"/v1/datasets/{dataset['id']}").status_code == 204


def test_feedback_on_a_run_and_the_run_as_a_case(api: APIClient, calc: Agent) -> None:
    answered = api.post(
        f"/v1/agents/{calc.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 12 times 11?"}]},
        format="json",
    )
    run_id = answered["X-Run-Id"]
    dataset = _dataset(api)

    thumbs = api.post(
        f"/v1/runs/{run_id}/feedback", {"score": -1, "comment": "terse"}, format="json"
    )
    again = api.post(f"/v1/runs/{run_id}/feedback", {"score": 1}, format="json")
    bad = api.post(f"/v1/runs/{run_id}/feedback", {"score": 5}, format="json")
    case = api.post(
        f"/v1/datasets/{dataset['id']}/cases/from-run", {"runId": run_id}, format="json"
    )

    assert (thumbs.status_code, again.status_code) == (200, 200)
    assert bad.status_code == 400
    assert bad.json()["detail"][0]["loc"] == ["body", "score"]
    assert list(RunFeedback.objects.values_list("score", "comment")) == [(1, "")]
    assert case.status_code == 201, case.content
    assert case.json()["input"] == {
        "messages": [{"role": "user", "content": "What is 12 times 11?"}]
    }
    assert case.json()["expected"] == {"output": ANSWER}
    assert case.json()["sourceRunId"] == run_id


def test_an_experiment_runs_in_the_servers_slots_and_reports_progress_and_scores(
    api: APIClient, calc: Agent, member: Any
) -> None:
    dataset = _dataset(api)
    _add(api, dataset["id"], ARITH)

    started = api.post(
        "/v1/experiments",
        {
            "agentId": str(calc.pk),
            "datasetId": dataset["id"],
            "scorers": ["exact"],
            "repetitions": 2,
            "concurrency": 2,
        },
        format="json",
    )
    assert started.status_code == 202, started.content
    assert started.json()["status"] == "queued"
    assert started.json()["progress"] == {"done": 0, "total": 4}
    body = experiment_ended(api, started.json()["id"])

    assert body["status"] == "completed"
    assert body["progress"] == {"done": 4, "total": 4}
    # `exact` applies to the first case only (the second expects tool calls).
    assert body["summary"]["exact"] == {"mean": 1.0, "passRate": 1.0, "cases": 2}
    assert body["latencyMs"]["p50"] is not None
    results = api.get(f"/v1/experiments/{body['id']}/results").json()["results"]
    assert len(results) == 4
    runs = Run.objects.filter(pk__in=[r["runId"] for r in results])
    assert {(r.caller, r.protocol) for r in runs} == {(member, "eval")}
    assert results[0]["scores"]["exact"]["passed"] is True


def test_an_experiment_is_refused_at_its_field_and_nothing_is_written(
    api: APIClient, calc: Agent, env: Any, make_agent: Callable[..., Agent]
) -> None:
    dataset = _dataset(api)
    _add(api, dataset["id"], ARITH)
    empty = _dataset(api, "empty")
    tasks = _dataset(api, "tasks", "task")
    base = {"agentId": str(calc.pk), "datasetId": dataset["id"], "scorers": ["exact"]}

    for body, loc in [
        ({**base, "scorers": ["nonsense"]}, ["body", "scorers", 0]),
        ({**base, "version": 9}, ["body", "version"]),
        ({**base, "datasetId": empty["id"]}, ["body", "revision"]),
        ({**base, "datasetId": tasks["id"]}, ["body", "datasetId"]),
        ({**base, "repetitions": 11}, ["body", "repetitions"]),
    ]:
        response = api.post("/v1/experiments", body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert response.json()["detail"][0]["loc"][: len(loc)] == loc, response.json()
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, env)
    refused = client_for(reader).post("/v1/experiments", base, format="json")
    assert refused.status_code == 403
    assert Experiment.objects.count() == 0
    assert ExperimentResult.objects.count() == 0


def test_a_task_case_whose_inputs_the_version_refuses_is_named_by_its_position(
    api: APIClient, make_agent: Callable[..., Agent]
) -> None:
    summariser = make_agent("summariser", "task")
    dataset = _dataset(api, "notes", "task")
    _add(
        api,
        dataset["id"],
        [{"input": {"inputs": {"text": "a", "audience": "b"}}}, {"input": {"inputs": {}}}],
    )

    response = api.post(
        "/v1/experiments",
        {"agentId": str(summariser.pk), "datasetId": dataset["id"], "scorers": ["exact"]},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["detail"][0]["loc"][:4] == ["dataset", "cases", 2, "input"]
    assert Experiment.objects.count() == 0


def test_compare_lists_the_regression_first(api: APIClient, calc: Agent, admin_user: Any) -> None:
    version_add(user=admin_user, agent=calc, config=NO_TOOLS)
    dataset = _dataset(api)
    _add(
        api,
        dataset["id"],
        [{"input": "What is 2 plus 2?", "expected": {"contains": ["4"]}}, ARITH[0]],
    )
    ids = []
    for version in (1, 2):
        started = api.post(
            "/v1/experiments",
            {
                "agentId": str(calc.pk),
                "version": version,
                "datasetId": dataset["id"],
                "scorers": ["exact"],
            },
            format="json",
        )
        ids.append(experiment_ended(api, started.json()["id"])["id"])

    compared = api.get(f"/v1/experiments/compare?a={ids[0]}&b={ids[1]}").json()

    first = compared["rows"][0]
    assert first["change"] == "regression"
    assert first["a"]["answer"] == ANSWER
    assert first["a"]["passed"] is True
    assert first["b"]["passed"] is False
    assert compared["counts"]["regression"] == 1
    only = api.get(f"/v1/experiments/compare?a={ids[0]}&b={ids[1]}&change=regression").json()
    assert len(only["rows"]) == 1


def test_a_gated_alias_refuses_a_version_that_fails_and_takes_one_that_passes(
    api: APIClient, calc: Agent, admin_user: Any, member: Any, env: Any
) -> None:
    version_add(user=admin_user, agent=calc, config=NO_TOOLS)  # v2: fails the dataset
    version_add(user=admin_user, agent=calc, config=CALCULATOR_CONFIG)  # v3: passes
    dataset = _dataset(api)
    _add(api, dataset["id"], ARITH)
    gate = api.put(
        f"/v1/agents/{calc.pk}/aliases/prod/gate",
        {"datasetId": dataset["id"], "scorers": ["exact"], "thresholds": {"exact": 1.0}},
        format="json",
    )
    assert gate.status_code == 200, gate.content

    refused = api.put(f"/v1/agents/{calc.pk}/aliases/prod", {"version": 2}, format="json")
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["misses"] == {"exact": {"mean": 0.0, "minimum": 1.0}}
    [failing] = body["failingCases"]
    assert failing["answer"] != ANSWER
    assert failing["scores"]["exact"]["passed"] is False
    assert not calc.aliases.exists()

    allowed = api.put(f"/v1/agents/{calc.pk}/aliases/prod", {"version": 3}, format="json")
    assert allowed.status_code == 200, allowed.content
    again = api.put(f"/v1/agents/{calc.pk}/aliases/prod", {"version": 1}, format="json")
    assert again.status_code == 200
    experiments = Experiment.objects.filter(agent=calc).order_by("created_at")
    assert [e.version.number for e in experiments] == [2, 3, 1]

    forced = api.put(
        f"/v1/agents/{calc.pk}/aliases/prod",
        {"version": 2, "force": True, "reason": "hotfix"},
        format="json",
    )
    assert forced.status_code == 403  # no AUDIT
    grant(member, Action.AUDIT, env)
    no_reason = api.put(
        f"/v1/agents/{calc.pk}/aliases/prod", {"version": 2, "force": True}, format="json"
    )
    assert no_reason.status_code == 400
    assert no_reason.json()["detail"][0]["loc"] == ["body", "reason"]
    forced = api.put(
        f"/v1/agents/{calc.pk}/aliases/prod",
        {"version": 2, "force": True, "reason": "hotfix"},
        format="json",
    )
    assert forced.status_code == 200

    history = api.get(f"/v1/agents/{calc.pk}/aliases/history").json()["changes"]
    assert [(c["toVersion"], c["forcedReason"]) for c in history] == [
        (2, "hotfix"),
        (1, None),
        (3, None),
    ]
    assert history[2]["experimentId"] == str(experiments[1].pk)
    assert history[1]["experimentId"] == str(experiments[2].pk)
    assert AliasChange.objects.filter(experiment__isnull=False).count() == 2


def test_a_gate_reuses_a_completed_experiment_of_the_same_version_revision_and_scorers(
    api: APIClient, calc: Agent
) -> None:
    dataset = _dataset(api)
    _add(api, dataset["id"], ARITH)
    started = api.post(
        "/v1/experiments",
        {"agentId": str(calc.pk), "datasetId": dataset["id"], "scorers": ["exact"]},
        format="json",
    )
    experiment_ended(api, started.json()["id"])
    api.put(
        f"/v1/agents/{calc.pk}/aliases/prod/gate",
        {"datasetId": dataset["id"], "scorers": ["exact"], "thresholds": {"exact": 0.5}},
        format="json",
    )

    moved = api.put(f"/v1/agents/{calc.pk}/aliases/prod", {"version": 1}, format="json")

    assert moved.status_code == 200
    assert Experiment.objects.count() == 1
    change = AliasChange.objects.get()
    assert str(change.experiment_id) == started.json()["id"]


def test_a_gate_is_refused_at_its_field(api: APIClient, calc: Agent) -> None:
    dataset = _dataset(api)
    url = f"/v1/agents/{calc.pk}/aliases/prod/gate"
    for body, loc in [
        (
            {"datasetId": dataset["id"], "scorers": ["exact"], "thresholds": {"exact": 2}},
            ["body", "thresholds", "exact"],
        ),
        (
            {"datasetId": dataset["id"], "scorers": ["exact"], "thresholds": {"judge": 1}},
            ["body", "thresholds", "judge"],
        ),
        (
            {"datasetId": dataset["id"], "scorers": ["nope"], "thresholds": {"exact": 1}},
            ["body", "scorers", 0],
        ),
    ]:
        response = api.put(url, body, format="json")
        assert response.status_code == 400
        assert response.json()["detail"][0]["loc"][: len(loc)] == loc
    assert api.get(url).status_code == 404


PROMPTFOO = """
prompts: ["What is {{a}} times {{b}}?"]
tests:
  - vars: {a: 12, b: 11}
    assert:
      - type: contains
        value: "132"
      - type: javascript
        value: output.length < 100
"""


def test_a_promptfoo_configuration_becomes_a_dataset_and_its_scorers(api: APIClient) -> None:
    response = api.post(
        "/v1/datasets/import/promptfoo",
        {"name": "from-promptfoo", "agentType": "tool", "config": PROMPTFOO},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["revision"], body["added"]) == (True, 1, 1)
    assert [s["name"] for s in body["scorers"]] == ["contains"]
    assert body["warnings"][0]["loc"][:4] == ["config", "tests", 0, "assert"]
    [case] = api.get(f"/v1/datasets/{body['dataset']['id']}/cases").json()["cases"]
    assert case["input"]["messages"][0]["content"] == "What is 12 times 11?"
    assert case["expected"]["contains"] == ["132"]


def test_a_promptfoo_configuration_refused_leaves_no_dataset(api: APIClient) -> None:
    bad = PROMPTFOO.replace('value: "132"', "value: {nested: 1}")

    response = api.post(
        "/v1/datasets/import/promptfoo",
        {"name": "from-promptfoo", "agentType": "tool", "config": bad},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json()["detail"][0]["loc"][:3] == ["body", "config", "tests"]
    assert not Dataset.objects.exists()


def test_a_dataset_name_that_is_not_one_is_refused_at_its_field(member: Any, env: Any) -> None:
    with pytest.raises(Invalid) as raised:
        dataset_create(
            user=member,
            environment=env,
            name="two words",
            agent_type="tool",
        )
    assert raised.value.errors[0].loc == ("body", "name")
    assert not Dataset.objects.exists()
