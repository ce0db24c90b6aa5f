"""The audit log in the admin (agents/audit/admin.py): changes made in the admin recorded as
the admin's, and the log's read-only page, scoped by AUDIT on the environment."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from agents.access.permissions import Action, grant
from agents.models import AgentWebhook, AuditRecord, Environment
from tests.factories import UserFactory
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
