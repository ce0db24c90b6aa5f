"""The admin of schedules (agents/schedules/admin.py): created, changed, paused and deleted
through the services, beat's rows with them; beat's own pages are not shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agents.models import Agent, Schedule
from tests.support.admin import browser_post_data

pytestmark = pytest.mark.django_db

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}
ADD = "/admin/agents/schedule/add/"


@pytest.fixture
def calc(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("calc")


@pytest.fixture
def admin_client(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


def form(agent: Agent, **changes: Any) -> dict[str, Any]:
    return {
        "agent": str(agent.pk),
        "cron": "0 9 * * 1-5",
        "timezone": "Europe/Paris",
        "version": "latest",
        "input": json.dumps(ASK),
        "enabled": "on",
        "webhook": "",
        **changes,
    }


def test_the_admin_creates_a_schedule_with_its_periodic_task(
    admin_client: Client, calc: Agent, admin_user: Any
) -> None:
    response = admin_client.post(ADD, form(calc))

    assert response.status_code == 302, response.content.decode()[-3000:]
    schedule = Schedule.objects.get()
    assert (schedule.agent, schedule.owner, schedule.input) == (calc, admin_user, ASK)
    task = PeriodicTask.objects.select_related("crontab").get(pk=schedule.periodic_task_id)
    assert task.enabled
    assert task.crontab is not None
    assert str(task.crontab.timezone) == "Europe/Paris"
    listed = admin_client.get("/admin/agents/schedule/").content.decode()
    assert "0 9 * * 1-5" in listed


@pytest.mark.parametrize(
    ("changes", "shown"),
    [
        ({"cron": "0 9 * *"}, "five fields"),
        ({"timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"version": "7"}, "not found"),
        ({"input": json.dumps({"messages": []})}, "input.messages"),
    ],
)
def test_a_bad_field_is_shown_on_the_form_and_nothing_is_written(
    admin_client: Client, calc: Agent, changes: dict[str, Any], shown: str
) -> None:
    response = admin_client.post(ADD, form(calc, **changes))

    assert response.status_code == 200
    assert shown in response.content.decode()
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()
    assert not CrontabSchedule.objects.exists()


def test_the_change_page_pauses_a_schedule(admin_client: Client, calc: Agent) -> None:
    admin_client.post(ADD, form(calc))
    schedule = Schedule.objects.get()
    page = admin_client.get(f"/admin/agents/schedule/{schedule.pk}/change/")

    data = browser_post_data(page, enabled="", cron="15 7 * * *")
    data.pop("enabled")
    response = admin_client.post(f"/admin/agents/schedule/{schedule.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[-3000:]
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.cron) == (False, "15 7 * * *")
    task = PeriodicTask.objects.select_related("crontab").get()
    assert not task.enabled
    assert task.crontab is not None
    assert (task.crontab.minute, task.crontab.hour) == ("15", "7")


def test_the_pause_and_resume_actions(admin_client: Client, calc: Agent) -> None:
    admin_client.post(ADD, form(calc))
    admin_client.post(ADD, form(calc, cron="*/5 * * * *"))
    ids = [str(pk) for pk in Schedule.objects.values_list("pk", flat=True)]
    changelist = "/admin/agents/schedule/"

    admin_client.post(changelist, {"action": "pause", "_selected_action": ids})
    paused = sorted(PeriodicTask.objects.values_list("enabled", flat=True))
    admin_client.post(changelist, {"action": "resume", "_selected_action": ids})

    assert paused == [False, False]
    assert sorted(Schedule.objects.values_list("enabled", flat=True)) == [True, True]
    assert sorted(PeriodicTask.objects.values_list("enabled", flat=True)) == [True, True]


def test_deleting_in_the_admin_removes_beats_rows(admin_client: Client, calc: Agent) -> None:
    admin_client.post(ADD, form(calc))
    schedule = Schedule.objects.get()

    response = admin_client.post(f"/admin/agents/schedule/{schedule.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()
    assert not CrontabSchedule.objects.exists()


def test_beats_own_pages_are_not_in_the_admin(admin_client: Client) -> None:
    assert admin_client.get("/admin/django_celery_beat/periodictask/").status_code == 404
    assert "Periodic tasks" not in admin_client.get("/admin/").content.decode()
