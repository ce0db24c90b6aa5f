"""The audit log's writes (agents/audit/services.py): append-only in the database, written
in the change's transaction (a failed change leaves none), the importer's surface, and a
deleted user's records keeping the name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError, transaction

from agentbuilder.errors import Conflict, Invalid
from agents.audit.services import audit_record
from agents.config_files.importer import agents_import
from agents.models import AuditRecord, Environment
from agents.services.agents import agent_create, agent_update
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
