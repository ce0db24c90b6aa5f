"""A2A push notifications (agents/protocols/a2a/push.py): a task's configs set, read, listed
and deleted in both dialects (1.0 through the `a2a-sdk` client against a live server), a
URL the address guard refuses answered -32602 at its path, and the task's end delivered to
the config's URL through the webhooks' machinery: the A2A payload of the dialect, the
config's token as `X-A2A-Notification-Token`, signed as every webhook is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from django.utils import timezone
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import Agent, PushConfig, Run, RunStatus, WebhookDelivery
from agents.runs.leases import runs_interrupt_expired
from agents.webhooks.delivery import deliveries_send_due
from agents.webhooks.secret import environment_secret_rotate
from tests.factories import UserFactory
from tests.live import django_port  # noqa: F401 (the fixture `port`)
from tests.support.a2a import ask, base, session, tok
from tests.support.webhooks import Receiver, webhooks_on_loopback  # noqa: F401

pytestmark = pytest.mark.usefixtures("webhooks_on_loopback")
LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
URL = "/v1/a2a/Calculator"


@pytest.fixture
def hook() -> Iterator[Receiver]:
    up = Receiver().start()
    yield up
    up.stop()


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def _working(agent: Agent, caller: Any) -> Run:
    """A task still working, whose process will turn out to be gone (its lease runs out)."""
    return Run.objects.create(
        agent=agent,
        version=agent.versions.get(),
        caller=caller,
        protocol="a2a",
        status=RunStatus.IN_PROGRESS,
        lease_until=timezone.now() + timedelta(minutes=5),
    )


def _rpc(client: APIClient, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    answer = client.post(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.mark.django_db
def test_a_03_config_is_kept_and_the_tasks_end_is_pushed_as_the_task(
    owner_client: APIClient, owner: Any, calculator: Agent, hook: Receiver
) -> None:
    secret = environment_secret_rotate(environment_id=calculator.environment_id)
    run = _working(calculator, owner)
    config = {"id": "c1", "url": hook.url, "token": "tok-1"}
    config["authentication"] = {"schemes": ["Bearer"], "credentials": "cred-1"}  # type: ignore[assignment]
    set_ = _rpc(
        owner_client,
        "tasks/pushNotificationConfig/set",
        {"taskId": str(run.pk), "pushNotificationConfig": config},
    )["result"]
    assert set_["taskId"] == str(run.pk)
    assert set_["pushNotificationConfig"]["id"] == "c1"
    assert set_["pushNotificationConfig"]["token"] == "tok-1"
    assert set_["pushNotificationConfig"]["authentication"] == {"schemes": ["Bearer"]}  # no creds

    got = _rpc(owner_client, "tasks/pushNotificationConfig/get", {"id": str(run.pk)})["result"]
    assert got == set_
    listed = _rpc(owner_client, "tasks/pushNotificationConfig/list", {"id": str(run.pk)})
    assert listed["result"] == [set_]

    run.lease_until = timezone.now() - timedelta(seconds=1)
    run.save()
    assert runs_interrupt_expired() == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.format, delivery.event) == ("a2a-0.3", "run.failed")
    assert deliveries_send_due() == 1
    (pushed,) = hook.received
    task = pushed.verified(secret)
    assert (task["kind"], task["id"], task["status"]["state"]) == ("task", str(run.pk), "failed")
    assert pushed.headers["X-A2A-Notification-Token"] == "tok-1"
    assert pushed.headers["Authorization"] == "Bearer cred-1"

    deleted = _rpc(
        owner_client,
        "tasks/pushNotificationConfig/delete",
        {"id": str(run.pk), "pushNotificationConfigId": "c1"},
    )
    assert deleted["result"] is None
    assert not PushConfig.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        (
            "tasks/pushNotificationConfig/set",
            {"pushNotificationConfig": {"url": "http://10.0.0.1/hook"}},
            ["params", "pushNotificationConfig", "url"],
        ),
        ("CreateTaskPushNotificationConfig", {"url": "http://10.0.0.1/hook"}, ["params", "url"]),
    ],
)
def test_a_push_url_the_guard_refuses_is_invalid_params_at_its_path(
    owner_client: APIClient,
    owner: Any,
    calculator: Agent,
    method: str,
    params: dict[str, Any],
    path: list[str],
) -> None:
    run = _working(calculator, owner)
    refused = _rpc(owner_client, method, {"taskId": str(run.pk), **params})["error"]
    assert refused["code"] == -32602
    data = refused["data"]  # 0.3: {"path", "errors"}; 1.0: the SDK's google.rpc details
    assert (data["path"] if isinstance(data, dict) else data[0]["metadata"]["path"]) == path
    assert "private address" in refused["message"]
    assert not PushConfig.objects.exists()


@pytest.mark.django_db
def test_a_finished_task_takes_no_config_and_another_callers_task_is_not_found(
    owner_client: APIClient, owner: Any, calculator: Agent, as_user: Any, hook: Receiver
) -> None:
    run = _working(calculator, owner)
    run.status = RunStatus.COMPLETED
    run.save()
    params = {"taskId": str(run.pk), "url": hook.url}
    refused = _rpc(owner_client, "CreateTaskPushNotificationConfig", params)["error"]
    assert refused["code"] == -32004
    other = UserFactory(username="other")
    grant(other, Action.INVOKE, calculator)
    unseen = _rpc(as_user(other), "tasks/pushNotificationConfig/list", {"id": str(run.pk)})["error"]
    assert unseen["code"] == -32001  # another caller's task
    assert not PushConfig.objects.exists()


# ---------------------------------------------------------------- 1.0, the SDK's client


async def _client_call(port: int, token: str, method: str, request: Any) -> Any:
    async with session(token) as client:
        card = await A2ACardResolver(client, base(port, "calculator")).get_agent_card()
        assert card.capabilities.push_notifications
        a2a = ClientFactory(ClientConfig(httpx_client=client)).create(card)
        if method == "send_message":  # the SDK yields a send's updates
            return [update async for update in a2a.send_message(request)]
        return await getattr(a2a, method)(request)


@LIVE
def test_the_sdk_client_sets_gets_lists_and_deletes_a_config(
    port: int, owner: Any, calculator: Agent, hook: Receiver
) -> None:
    token = tok(owner)
    run = _working(calculator, owner)
    task_id = str(run.pk)
    config = pb.TaskPushNotificationConfig(task_id=task_id, id="c1", url=hook.url, token="tok-1")

    def sdk(method: str, request: Any) -> Any:
        return asyncio.run(_client_call(port, token, method, request))

    made = sdk("create_task_push_notification_config", config)
    assert (made.id, made.task_id, made.url, made.token) == ("c1", task_id, hook.url, "tok-1")
    got = sdk(
        "get_task_push_notification_config",
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id="c1"),
    )
    assert got == made
    listed = sdk(
        "list_task_push_notification_configs",
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id),
    )
    assert list(listed.configs) == [made]
    sdk(
        "delete_task_push_notification_config",
        pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="c1"),
    )
    assert not PushConfig.objects.exists()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELED)  # no config: no delivery
    assert not WebhookDelivery.objects.exists()


@LIVE
def test_a_send_with_a_config_pushes_the_finished_task_as_a_stream_response(
    port: int, owner: Any, calculator: Agent, hook: Receiver
) -> None:
    secret = environment_secret_rotate(environment_id=calculator.environment_id)
    config = pb.TaskPushNotificationConfig(url=hook.url, token="tok-2")
    request = pb.SendMessageRequest(
        message=ask(),
        configuration=pb.SendMessageConfiguration(task_push_notification_config=config),
    )
    updates = asyncio.run(_client_call(port, tok(owner), "send_message", request))
    task_id = updates[0].task.id
    Run.objects.get(pk=task_id, status=RunStatus.COMPLETED)  # a blocking send: it has ended

    assert deliveries_send_due() == 1
    (pushed,) = hook.received
    body = pushed.verified(secret)
    assert body["task"]["id"] == task_id
    assert body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert pushed.headers["X-A2A-Notification-Token"] == "tok-2"
    assert WebhookDelivery.objects.get().format == "a2a-1.0"
