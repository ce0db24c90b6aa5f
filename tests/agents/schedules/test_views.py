"""Schedules over the API (docs/api.md#schedules): created, listed, shown, changed, paused
and deleted with their beat rows; READ lists, EDIT writes, the owner must hold INVOKE; a
bad cron, time zone, version or input is a 400 at its field."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import Agent, Schedule
from agents.services.agents import agent_delete
from agents.services.aliases import alias_set
from tests.conftest import client_for
from tests.factories import UserFactory

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}
INPUTS = {"inputs": {"audience": "admins", "text": "Schedules run agents on a cron."}}


def url(agent: Agent) -> str:
    return f"/v1/agents/{agent.pk}/schedules"


def detail(schedule_id: Any) -> str:
    return f"/v1/schedules/{schedule_id}"


def create(client: APIClient, agent: Agent, **body: Any) -> Any:
    return client.post(url(agent), {"cron": "0 9 * * 1-5", "input": ASK, **body}, format="json")


def assert_invalid(response: Any, loc: list[Any]) -> None:
    assert response.status_code == 400, response.json()
    assert [item["loc"] for item in response.json()["detail"]] == [loc], response.json()


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


@pytest.fixture
def summarizer(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("summarizer", agent_type="task")


# ---------------------------------------------------------------- create, list, show


def test_create_answers_the_schedule_and_writes_beats_rows(
    owner_client: APIClient, calc: Agent
) -> None:
    created = create(owner_client, calc, timezone="Europe/Paris", version=1)

    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["agentId"] == str(calc.pk)
    assert (body["cron"], body["timezone"], body["version"]) == ("0 9 * * 1-5", "Europe/Paris", 1)
    assert body["input"] == ASK
    assert (body["enabled"], body["webhook"], body["owner"]) == (True, None, "owner")
    assert body["nextRunAt"] is not None
    assert (body["lastFiredAt"], body["lastRunId"], body["lastError"]) == (None, None, None)
    schedule = Schedule.objects.get(pk=body["id"])
    task = PeriodicTask.objects.select_related("crontab").get(pk=schedule.periodic_task_id)
    assert task.task == "agents.schedule_tick"
    assert json.loads(task.kwargs) == {"schedule_id": body["id"]}
    assert task.enabled
    crontab = task.crontab
    assert crontab is not None
    fields = (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year)
    assert (*fields, crontab.day_of_week) == ("0", "9", "*", "*", "1-5")
    assert str(crontab.timezone) == "Europe/Paris"


def test_list_and_get_show_the_agents_schedules(owner_client: APIClient, calc: Agent) -> None:
    first = create(owner_client, calc).json()
    second = create(owner_client, calc, cron="*/15 * * * *", version="latest").json()

    listed = owner_client.get(url(calc))
    shown = owner_client.get(detail(second["id"]))

    assert listed.status_code == 200
    assert [s["id"] for s in listed.json()["schedules"]] == [first["id"], second["id"]]
    assert listed.json()["pagination"]["totalItems"] == 2
    assert shown.status_code == 200
    assert shown.json() == {**second, "modifiedAt": shown.json()["modifiedAt"]}
    assert shown.json()["version"] == "latest"


def test_a_task_agent_takes_inputs(owner_client: APIClient, summarizer: Agent) -> None:
    created = create(owner_client, summarizer, input=INPUTS)

    assert created.status_code == 201, created.json()
    assert created.json()["input"] == INPUTS


def test_an_alias_is_kept_as_given(owner_client: APIClient, calc: Agent, owner: Any) -> None:
    alias_set(user=owner, agent=calc, name="prod", version_number=1)

    created = create(owner_client, calc, version="prod")

    assert created.status_code == 201, created.json()
    assert created.json()["version"] == "prod"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "cron",
    ["0 9 * *", "61 * * * *", "0 25 * * *", "0 9 31 2 *", "0 9 * * 8", "every day", "0 9 * * *x"],
)
def test_a_cron_that_does_not_parse_is_a_400_at_cron(
    owner_client: APIClient, calc: Agent, cron: str
) -> None:
    assert_invalid(create(owner_client, calc, cron=cron), ["body", "cron"])
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()


@pytest.mark.parametrize("zone", ["Mars/Olympus", "CEST", "", "../etc/passwd", "utc "])
def test_an_unknown_time_zone_is_a_400_at_timezone(
    owner_client: APIClient, calc: Agent, zone: str
) -> None:
    assert_invalid(create(owner_client, calc, timezone=zone), ["body", "timezone"])


@pytest.mark.parametrize("version", [7, "nope", "-1", 0, "latest!"])
def test_a_version_the_agent_does_not_have_is_a_400_at_version(
    owner_client: APIClient, calc: Agent, version: Any
) -> None:
    assert_invalid(create(owner_client, calc, version=version), ["body", "version"])


@pytest.mark.parametrize(
    ("agent_name", "data", "loc"),
    [
        ("calc", {"messages": []}, ["body", "input", "messages"]),
        ("calc", {"messages": [{"role": "robot", "content": "x"}]}, None),
        ("calc", {"inputs": {"text": "x"}}, None),
        ("calc", {"messages": ASK["messages"], "guardrails": ["nope"]}, None),
        ("summarizer", {"inputs": {"audience": "x"}}, ["body", "input", "inputs", "text"]),
        ("summarizer", {"inputs": {"text": 3}}, ["body", "input", "inputs", "text"]),
        ("summarizer", ASK, None),
    ],
)
def test_bad_input_is_a_400_under_input(
    owner_client: APIClient,
    calc: Agent,
    summarizer: Agent,
    agent_name: str,
    data: Any,
    loc: list[Any] | None,
) -> None:
    agent = calc if agent_name == "calc" else summarizer

    response = create(owner_client, agent, input=data)

    assert response.status_code == 400, response.json()
    locs = [item["loc"] for item in response.json()["detail"]]
    assert all(at[:2] == ["body", "input"] for at in locs), locs
    if loc is not None:
        assert loc in locs, locs
    assert not Schedule.objects.exists()


def test_a_guardrail_unknown_to_the_environment_is_located(
    owner_client: APIClient, calc: Agent
) -> None:
    data = {**ASK, "guardrails": ["nope"]}
    assert_invalid(create(owner_client, calc, input=data), ["body", "input", "guardrails", 0])


def test_a_webhook_to_a_private_address_is_a_400_at_its_url(
    owner_client: APIClient, calc: Agent
) -> None:
    webhook = {"url": "http://127.0.0.1:9/hook"}
    assert_invalid(create(owner_client, calc, webhook=webhook), ["body", "webhook", "url"])


@pytest.mark.parametrize(
    ("field", "value"), [("background", True), ("webhook", {"url": "http://127.0.0.1:9/h"})]
)
def test_the_input_carries_no_background_nor_webhook(
    owner_client: APIClient, calc: Agent, field: str, value: Any
) -> None:
    data = {**ASK, field: value}
    assert_invalid(create(owner_client, calc, input=data), ["body", "input", field])


def test_an_unknown_webhook_event_is_a_400_at_its_index(
    owner_client: APIClient, calc: Agent
) -> None:
    webhook = {"url": "http://127.0.0.1:9/hook", "events": ["run.completed", "run.exploded"]}
    assert_invalid(create(owner_client, calc, webhook=webhook), ["body", "webhook", "events", 1])


def test_a_bad_patch_changes_nothing(owner_client: APIClient, calc: Agent) -> None:
    created = create(owner_client, calc).json()

    response = owner_client.patch(
        detail(created["id"]), {"cron": "0 9 * * 1-5", "timezone": "Nowhere"}, format="json"
    )

    assert_invalid(response, ["body", "timezone"])
    assert owner_client.get(detail(created["id"])).json()["timezone"] == "UTC"


# ---------------------------------------------------------------- change, pause, delete


def test_patch_changes_the_cron_and_beats_crontab(owner_client: APIClient, calc: Agent) -> None:
    created = create(owner_client, calc).json()

    changed = owner_client.patch(
        detail(created["id"]), {"cron": "30 7 * * *", "timezone": "Asia/Tokyo"}, format="json"
    )

    assert changed.status_code == 200, changed.json()
    assert (changed.json()["cron"], changed.json()["timezone"]) == ("30 7 * * *", "Asia/Tokyo")
    assert changed.json()["input"] == ASK  # untouched
    crontab = CrontabSchedule.objects.get()
    assert (crontab.minute, crontab.hour, str(crontab.timezone)) == ("30", "7", "Asia/Tokyo")


def test_pausing_disables_the_periodic_task_and_resuming_enables_it(
    owner_client: APIClient, calc: Agent
) -> None:
    created = create(owner_client, calc).json()

    paused = owner_client.patch(detail(created["id"]), {"enabled": False}, format="json")
    task = PeriodicTask.objects.get()
    resumed = owner_client.patch(detail(created["id"]), {"enabled": True}, format="json")

    assert paused.status_code == 200, paused.json()
    assert (paused.json()["enabled"], paused.json()["nextRunAt"]) == (False, None)
    assert not task.enabled
    assert resumed.json()["enabled"] is True
    assert PeriodicTask.objects.get().enabled


def test_delete_removes_the_schedule_and_its_beat_rows(
    owner_client: APIClient, calc: Agent
) -> None:
    created = create(owner_client, calc).json()

    deleted = owner_client.delete(detail(created["id"]))

    assert deleted.status_code == 204
    assert owner_client.get(detail(created["id"])).status_code == 404
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()
    assert not CrontabSchedule.objects.exists()


def test_deleting_the_agent_deletes_its_schedules(
    owner_client: APIClient, calc: Agent, owner: Any
) -> None:
    create(owner_client, calc)

    agent_delete(user=owner, agent=calc)

    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()


def test_the_webhook_can_be_set_and_removed(
    owner_client: APIClient, calc: Agent, settings: Any
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    created = create(owner_client, calc).json()
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["run.completed"]}

    set_ = owner_client.patch(detail(created["id"]), {"webhook": hook}, format="json")
    kept = owner_client.patch(detail(created["id"]), {"enabled": False}, format="json")
    removed = owner_client.patch(detail(created["id"]), {"webhook": None}, format="json")

    assert set_.json()["webhook"] == hook, set_.json()
    assert kept.json()["webhook"] == hook
    assert removed.json()["webhook"] is None


# ---------------------------------------------------------------- who may


@pytest.fixture
def reader(env: Any) -> Any:
    user = UserFactory(username="reader")
    grant(user, Action.READ, env)
    return user


def test_read_lists_but_cannot_write(owner_client: APIClient, calc: Agent, reader: Any) -> None:
    created = create(owner_client, calc).json()
    client = client_for(reader)

    assert client.get(url(calc)).status_code == 200
    assert client.get(detail(created["id"])).status_code == 200
    assert create(client, calc).status_code == 403
    assert client.patch(detail(created["id"]), {"enabled": False}, format="json").status_code == 403
    assert client.delete(detail(created["id"])).status_code == 403
    assert Schedule.objects.get().enabled


def test_a_stranger_sees_no_schedule(owner_client: APIClient, calc: Agent, stranger: Any) -> None:
    created = create(owner_client, calc).json()
    client = client_for(stranger)

    assert client.get(url(calc)).status_code == 404
    assert client.get(detail(created["id"])).status_code == 404
    assert client.patch(detail(created["id"]), {"enabled": False}, format="json").status_code == 404
    assert client.delete(detail(created["id"])).status_code == 404
    assert client.get(detail(uuid.uuid4())).status_code == 404
    assert client.get(detail("not-a-uuid")).status_code in (400, 404)


def test_a_schedule_of_another_environment_is_not_found(
    owner_client: APIClient, calc: Agent, other_env: Any, owner: Any
) -> None:
    created = create(owner_client, calc).json()
    grant(owner, Action.READ, other_env)

    assert client_for(owner, other_env).get(detail(created["id"])).status_code == 404


def test_edit_without_invoke_cannot_create(calc: Agent, env: Any) -> None:
    editor = UserFactory(username="editor")
    grant(editor, Action.READ, env)
    grant(editor, Action.EDIT, env)

    response = create(client_for(editor), calc)

    assert response.status_code == 403, response.json()
    assert "INVOKE" in response.json()["detail"]
    assert not Schedule.objects.exists()


def test_changing_what_runs_makes_the_editor_the_owner(
    owner_client: APIClient, calc: Agent, env: Any
) -> None:
    created = create(owner_client, calc).json()
    editor = UserFactory(username="editor")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(editor, action, env)
    client = client_for(editor)

    paused = client.patch(detail(created["id"]), {"enabled": False}, format="json")
    changed = client.patch(detail(created["id"]), {"input": ASK, "version": 1}, format="json")

    assert paused.json()["owner"] == "owner"  # pausing is not choosing what runs
    assert changed.json()["owner"] == "editor", changed.json()


def test_an_editor_without_invoke_cannot_change_what_another_owner_runs(
    owner_client: APIClient, calc: Agent, env: Any
) -> None:
    created = create(owner_client, calc).json()
    editor = UserFactory(username="editor")
    grant(editor, Action.READ, env)
    grant(editor, Action.EDIT, env)
    client = client_for(editor)

    changed = client.patch(detail(created["id"]), {"version": 1}, format="json")
    paused = client.patch(detail(created["id"]), {"enabled": False}, format="json")

    assert changed.status_code == 403, changed.json()
    assert paused.status_code == 200, paused.json()  # anyone with EDIT may stop it
    assert paused.json()["owner"] == "owner"
