"""The audit log's writes (agents/audit/services.py): append-only in the database, written
in the change's transaction (a failed change leaves none), the importer's surface, and a
deleted user's records keeping the name."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.exceptions import ObjectDoesNotExist
from django.db import DatabaseError, IntegrityError, transaction
from rest_framework.test import APIClient

from agentbuilder.errors import Conflict, Invalid
from agents.access.api_clients import (
    RateLimits,
    api_client_create,
    api_client_secret_rotate,
    api_client_update,
)
from agents.access.permissions import Action
from agents.audit.services import audit_record
from agents.config_files.importer import agents_import
from agents.evals.gates import gate_set
from agents.evals.services import cases_add, dataset_create, dataset_delete
from agents.mcp_registry.services import mcp_server_create
from agents.models import Agent, AuditRecord, Environment
from agents.models import APIClient as ApiClientRow
from agents.services.agents import agent_create, agent_update
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.config_files import agents, read, write

pytestmark = pytest.mark.django_db


def test_the_database_refuses_to_rewrite_or_remove_a_record(make_agent: Any) -> None:
    make_agent()
    record = AuditRecord.objects.filter(object_type="agent").get()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditRecord.objects.filter(pk=record.pk).update(action="nothing")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditRecord.objects.filter(pk=record.pk).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditRecord.objects.filter(pk=record.pk).update(actor=None, changes={})
    assert AuditRecord.objects.get(pk=record.pk).action == "create"


def test_a_deleted_user_leaves_the_records_with_their_name(env: Environment) -> None:
    # A user who made versions cannot be deleted (versions are immutable, migration 0002):
    # a record of another change stands for them.
    user = UserFactory(username="leaver")
    with transaction.atomic():
        audit_record(user=user, action="update", obj=env, environment=env)
    user.delete()
    names = set(AuditRecord.objects.values_list("actor_id", "actor_name"))
    assert names == {(None, "leaver")}


def test_a_failed_change_writes_no_record(make_agent: Any, admin_user: Any) -> None:
    agent = make_agent("calc")
    make_agent("taken")
    before = AuditRecord.objects.count()
    with pytest.raises(Conflict):
        agent_update(user=admin_user, agent=agent, changes={"name": "taken"})
    with pytest.raises(Invalid):
        agent_create(
            user=admin_user,
            environment=agent.environment,
            name="new",
            agent_type="tool",
            config={"model": "no-such-model"},
        )
    assert AuditRecord.objects.count() == before


def test_an_unchanged_update_records_nothing(make_agent: Any, admin_user: Any) -> None:
    agent = make_agent("calc")
    before = AuditRecord.objects.count()
    agent_update(user=admin_user, agent=agent, changes={"name": "calc"})
    assert AuditRecord.objects.count() == before


def test_the_importers_changes_are_recorded_as_the_imports(
    env: Environment, admin_user: Any, make_agent: Any, tmp_path: Path
) -> None:
    make_agent("calc")
    agents("export", "--environment", env.name, "--out", tmp_path)
    (path,) = tmp_path.glob("*.yaml")
    document = read(path)
    document["description"] = "imported"
    write(path, document)
    before = AuditRecord.objects.count()
    agents_import(user=admin_user, environment=env, paths=[path])
    new = AuditRecord.objects.order_by("id")[before:]
    assert [(r.surface, r.action, r.object_type) for r in new] == [("import", "update", "agent")]
    assert new[0].changes == {"description": {"from": "", "to": "imported"}}


def _api_client_secret(api: APIClient, env: Environment, user: Any) -> list[str]:
    with transaction.atomic():
        issued = api_client_create(
            name="ci", environment=env, actions=[Action.INVOKE], limits=RateLimits(5), user=user
        )
    rotated = api_client_secret_rotate(user=user, client=issued.client)
    token = APIClient().post(
        "/v1/auth/token",
        {
            "grant_type": "client_credentials",
            "client_id": issued.client.client_id,
            "client_secret": rotated,
        },
        format="json",
    )
    assert token.status_code == 200, token.json()
    return [issued.secret, rotated, token.json()["access_token"]]


def _mcp_headers(api: APIClient, env: Environment, user: Any) -> list[str]:
    first, second, in_url = (secrets.token_urlsafe(16) for _ in range(3))
    made = api.post(
        "/v1/mcp-servers",
        {
            "name": "tools",
            "url": f"http://127.0.0.1:9/mcp?key={in_url}",
            "headers": {"Authorization": f"Bearer {first}"},
        },
        format="json",
    )
    assert made.status_code == 201, made.json()
    changed = api.patch(
        f"/v1/mcp-servers/{made.json()['id']}",
        {"headers": {"Authorization": f"Bearer {second}"}},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    return [first, second, in_url]


def _webhook_secrets(api: APIClient, env: Environment, user: Any) -> list[str]:
    rotated = api.post("/v1/webhook-secret")
    assert rotated.status_code == 200, rotated.json()
    in_url = secrets.token_urlsafe(16)
    agent = Agent.objects.get()
    hook = api.post(
        f"/v1/agents/{agent.pk}/webhooks",
        {"url": f"http://127.0.0.1:9/hook?sig={in_url}"},
        format="json",
    )
    assert hook.status_code == 201, hook.json()
    return [rotated.json()["secret"], in_url]


def _user_token(api: APIClient, env: Environment, user: Any) -> list[str]:
    password = secrets.token_urlsafe(16)
    user.set_password(password)
    user.save()
    body = {"grant_type": "password", "username": user.username, "password": password}
    token = APIClient().post("/v1/auth/token", body, format="json")
    assert token.status_code == 200, token.json()
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {token.json()['access_token']}")
    agent = Agent.objects.get()
    assert bearer.patch(f"/v1/agents/{agent.pk}", {"description": "x"}, format="json").status_code
    return [password, token.json()["access_token"]]


@pytest.mark.usefixtures("webhooks_on_loopback")
@pytest.mark.parametrize(
    "make_secrets", [_api_client_secret, _mcp_headers, _webhook_secrets, _user_token]
)
def test_no_record_holds_a_secret(
    make_secrets: Callable[[APIClient, Environment, Any], list[str]],
    owner: Any,
    env: Environment,
    make_agent: Any,
    settings: Any,
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    make_agent("calc")
    before = AuditRecord.objects.count()
    made = make_secrets(client_for(owner, env), env, owner)
    assert AuditRecord.objects.count() > before
    stored = str(list(AuditRecord.objects.values()))
    for secret in made:
        assert len(secret) >= 16
        assert secret not in stored


def test_a_failed_change_of_any_kind_writes_no_record(
    env: Environment, admin_user: Any, make_agent: Any, settings: Any
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    agent = make_agent("calc")
    dataset = dataset_create(user=admin_user, environment=env, name="golden", agent_type="tool")
    gate_set(
        user=admin_user,
        agent=agent,
        name="prod",
        dataset=dataset,
        scorers=["exact"],
        thresholds={"exact": 1},
    )
    issued = api_client_create(name="ci", environment=env)
    before = AuditRecord.objects.count()
    with pytest.raises(Conflict):  # the gate uses it
        dataset_delete(user=admin_user, dataset=dataset)
    with pytest.raises(Conflict):
        dataset_create(user=admin_user, environment=env, name="GOLDEN", agent_type="tool")
    with pytest.raises(Invalid):
        cases_add(user=admin_user, dataset=dataset, cases=[{"input": 1}, {"nothing": 2}])
    with pytest.raises(Invalid):
        gate_set(
            user=admin_user,
            agent=agent,
            name="prod",
            dataset=dataset,
            scorers=["exact"],
            thresholds={"exact": 2},
        )
    with pytest.raises(Invalid):
        mcp_server_create(user=admin_user, environment=env, name="x", url="http://10.0.0.1/")
    with pytest.raises(IntegrityError), transaction.atomic():  # a limit of 0: the table refuses
        api_client_update(
            user=admin_user, client=issued.client, name="ci", enabled=True, limits=RateLimits(0)
        )
    # Refused after its record was written (the client made, then a grant of no such
    # permission): the record goes with the rest.
    with pytest.raises(ObjectDoesNotExist):
        api_client_create(name="late", environment=env, actions=[cast(Action, "no_such_perm")])
    assert not ApiClientRow.objects.filter(name="late").exists()
    assert AuditRecord.objects.count() == before
