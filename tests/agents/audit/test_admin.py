"""The audit log in the admin (agents/audit/admin.py): changes made in the admin recorded as
the admin's, and the log's read-only page, scoped by AUDIT on the environment."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission

from agents.access.permissions import Action, grant
from agents.models import AgentWebhook, APIClient, AuditRecord, Dataset, Environment, McpServer
from tests.factories import UserFactory
from tests.support.admin import browser_post_data
from tests.support.datasets_admin import signed_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhooks_on_loopback")]

PAGE = "/admin/agents/auditrecord/"


def test_changes_in_the_admin_are_recorded_as_the_admins(
    client: Any, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent()
    client.force_login(admin_user)
    form = {"agent": str(agent.pk), "url": "http://127.0.0.1:9/hook", "events": ["run.failed"]}
    added = client.post("/admin/agents/agentwebhook/add/", form)
    assert added.status_code == 302, added.content.decode()[-2000:]
    hook = AgentWebhook.objects.get()
    removed = client.post(f"/admin/agents/agentwebhook/{hook.pk}/delete/", {"post": "yes"})
    assert removed.status_code == 302
    made, gone = AuditRecord.objects.filter(object_type="agentwebhook").order_by("id")
    assert (made.action, made.surface, made.ip, made.actor) == (
        "create",
        "admin",
        "127.0.0.1",
        admin_user,
    )
    assert made.changes["events"] == {"from": None, "to": ["run.failed"]}
    assert (gone.action, gone.surface, gone.object_id) == ("delete", "admin", str(hook.pk))

    listing = client.get(PAGE).content.decode()
    assert "agentwebhook" in listing
    record = client.get(f"{PAGE}{made.pk}/change/")
    assert record.status_code == 200
    assert "run.failed" in record.content.decode()
    assert client.get(f"{PAGE}add/").status_code == 403
    assert client.post(f"{PAGE}{made.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditRecord.objects.filter(pk=made.pk).exists()


def test_the_page_shows_only_the_environments_the_user_audits(
    env: Environment, other_env: Environment, make_agent: Any
) -> None:
    make_agent("mine")
    make_agent("theirs", environment=other_env)
    auditor = UserFactory(username="auditor", is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditrecord"))
    grant(auditor, Action.READ, env)
    grant(auditor, Action.READ, other_env)
    grant(auditor, Action.AUDIT, env)
    listing = signed_in(auditor).get(PAGE).content.decode()
    assert "mine" in listing
    assert "theirs" not in listing


def _made(object_type: str, since: int) -> list[AuditRecord]:
    return list(AuditRecord.objects.filter(object_type=object_type, pk__gt=since).order_by("id"))


def _latest() -> int:
    return AuditRecord.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _from_the_admin(records: list[AuditRecord], actor: Any) -> None:
    assert records
    for record in records:
        assert (record.surface, record.ip, record.actor) == ("admin", "127.0.0.1", actor)


def test_object_permissions_granted_and_revoked_in_the_admin_are_recorded(
    client: Any, admin_user: Any, make_agent: Any, env: Environment
) -> None:
    agent = make_agent("calc")
    bob = UserFactory(username="bob")
    team = Group.objects.create(name="team")
    client.force_login(admin_user)
    since = _latest()
    on_agent = f"/admin/agents/agent/{agent.pk}/permissions/user-manage/{bob.pk}/"
    both = {"permissions": ["view_agent", "invoke_agent"]}
    assert client.post(on_agent, both).status_code == 302
    assert client.post(on_agent, {"permissions": ["view_agent"]}).status_code == 302
    on_env = f"/admin/agents/environment/{env.pk}/permissions/group-manage/{team.pk}/"
    assert client.post(on_env, {"permissions": ["audit_agent"]}).status_code == 302

    log = _made("permission", since)
    _from_the_admin(log, admin_user)
    assert [(r.action, r.changes["permission"], r.object_id) for r in log] == [
        ("permission.grant", {"from": None, "to": "invoke_agent"}, str(agent.pk)),
        ("permission.grant", {"from": None, "to": "view_agent"}, str(agent.pk)),
        ("permission.revoke", {"from": "invoke_agent", "to": None}, str(agent.pk)),
        ("permission.grant", {"from": None, "to": "audit_agent"}, str(env.pk)),
    ]
    assert log[2].changes["user"] == {"from": "bob", "to": None}
    assert log[2].changes["objectType"] == {"from": "agent", "to": None}
    assert log[3].changes["group"] == {"from": None, "to": "team"}
    assert log[3].changes["objectType"] == {"from": None, "to": "environment"}
    assert log[3].object_repr == "audit_agent of group 'team' on environment 'default'"
    assert all(r.environment_id == env.pk for r in log)


def test_api_clients_made_changed_and_rotated_in_the_admin_are_recorded(
    client: Any, admin_user: Any, env: Environment
) -> None:
    client.force_login(admin_user)
    since = _latest()
    form = {
        "name": "ci",
        "environment": env.pk,
        "permissions": ["invoke_agent"],
        "requests_per_minute": "60",
    }
    assert client.post("/admin/agents/apiclient/add/", form).status_code == 302
    made = APIClient.objects.get()
    url = f"/admin/agents/apiclient/{made.pk}/change/"
    changed = client.post(url, browser_post_data(client.get(url), tokens_per_minute="900"))
    assert changed.status_code == 302
    rotate = {"action": "rotate_client_secret", "_selected_action": [str(made.pk)]}
    assert client.post("/admin/agents/apiclient/", rotate).status_code == 302

    log = _made("apiclient", since)
    _from_the_admin(log, admin_user)
    assert [r.action for r in log] == ["create", "update", "secret.rotate"]
    assert log[0].changes["requests_per_minute"] == {"from": None, "to": 60}
    assert log[0].changes["secret"] == {"from": "changed", "to": "changed"}
    assert log[0].environment_id == env.pk
    assert log[1].changes == {"tokens_per_minute": {"from": None, "to": 900}}
    assert log[2].changes == {"secret": {"from": "changed", "to": "changed"}}
    (granted,) = _made("permission", since)
    assert granted.changes["user"] == {"from": None, "to": made.service_user.username}
    assert granted.surface == "admin"


def test_mcp_servers_datasets_and_gates_in_the_admin_are_recorded_bulk_deletes_too(
    client: Any, admin_user: Any, env: Environment, make_agent: Any, settings: Any
) -> None:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    agent = make_agent("calc")
    client.force_login(admin_user)
    since = _latest()
    for name in ("one", "two"):
        form = {
            "environment": str(env.pk),
            "name": name,
            "url": "http://127.0.0.1:9/mcp",
            "transport": "streamable_http",
            "timeout": "10",
            "enabled": "on",
            "headers": "X-Team: blue",
        }
        added = client.post("/admin/agents/mcpserver/add/", form)
        assert added.status_code == 302, added.content.decode()[-2000:]
    servers = [str(pk) for pk in McpServer.objects.values_list("pk", flat=True)]
    bulk = {"action": "delete_selected", "_selected_action": servers, "post": "yes"}
    assert client.post("/admin/agents/mcpserver/", bulk).status_code == 302
    assert not McpServer.objects.exists()
    dataset = {"environment": str(env.pk), "name": "golden", "agent_type": "tool"}
    assert client.post("/admin/agents/dataset/add/", dataset).status_code == 302
    golden = Dataset.objects.get()
    aliases = f"/admin/agents/agent/{agent.pk}/aliases/"
    gate = {
        "action": "gate",
        "name": "prod",
        "dataset": golden.pk,
        "scorers": '["exact"]',
        "thresholds": '{"exact": 1.0}',
    }
    assert client.post(aliases, gate).status_code == 302
    assert client.post(aliases, {"action": "ungate", "name": "prod"}).status_code == 302
    removed = client.post(f"/admin/agents/dataset/{golden.pk}/delete/", {"post": "yes"})
    assert removed.status_code == 302

    servers_log, datasets_log, gates_log = (
        _made(kind, since) for kind in ("mcpserver", "dataset", "gate")
    )
    for log in (servers_log, datasets_log, gates_log):
        _from_the_admin(log, admin_user)
    assert [r.action for r in servers_log] == ["create", "create", "delete", "delete"]
    assert sorted(r.object_id for r in servers_log[2:]) == sorted(servers)
    assert servers_log[0].changes["headers"] == {"from": None, "to": "changed"}
    assert [r.action for r in datasets_log] == ["create", "delete"]
    assert [r.action for r in gates_log] == ["gate.set", "gate.delete"]
    assert gates_log[0].changes["dataset"] == {"from": None, "to": str(golden.pk)}
