"""agentbuilder.db's statements written once: `one_model` reads a fixed statement's row
as the ORM would (the mapping of its columns kept after the first execution),
`insert_new` stores a new row as `save()` would."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now

from agentbuilder.db import _compiled, insert_new, one_model, one_row
from agentbuilder.liveness import lease_expiry, lease_seconds
from agents.examples import CALCULATOR
from agents.models import Agent, AgentVersion, Run

pytestmark = pytest.mark.django_db

VERSIONS = AgentVersion._meta.db_table  # a name from the model; values are parameters
# Columns in an order unlike the model's, a JSON column, and one that is not a field.
SQL = (
    "SELECT v.config, 41 + 1 AS answer, v.number, v.id, v.agent_id, v.created_at"  # noqa: S608
    f" FROM {VERSIONS} v WHERE v.agent_id = %s ORDER BY v.number DESC"
)


def test_a_row_reads_as_the_orm_reads_it(make_agent: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    orm = agent.versions.get()

    for _ in range(2):  # the first execution learns the columns, the second reuses them
        version = one_model(AgentVersion, SQL, [agent.pk])
        assert version is not None
        assert (version.pk, version.number, version.agent_id) == (orm.pk, 1, agent.pk)
        assert version.config == orm.config  # converted from JSON, not left a string
        assert list(version.config) == list(orm.config)  # in its stored order
        assert version.created_at == orm.created_at
        assert version.answer == 42  # type: ignore[attr-defined]
        assert version.get_deferred_fields() == {
            "notes",
            "version_label",
            "created_by_id",
            "config_as_written",
        }
        assert not version._state.adding


def test_no_row_is_none(make_agent: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    assert one_model(AgentVersion, SQL, [agent.pk]) is not None
    agent.versions.all().delete()
    assert one_model(AgentVersion, SQL, [agent.pk]) is None


def test_a_statement_without_the_primary_key_is_refused(make_agent: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    sql = f"SELECT v.number FROM {VERSIONS} v WHERE v.agent_id = %s"  # noqa: S608
    with pytest.raises(ValueError, match="primary key"):
        one_model(AgentVersion, sql, [agent.pk])


def test_insert_new_stores_what_save_stores(make_agent: Any, admin_user: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    fields = {
        "agent": agent,
        "version": agent.versions.get(),
        "caller": admin_user,
        "protocol": "invoke",
        "thread_id": "t-1",
        "messages": [{"role": "user", "content": 'ünïcode and a "quote"'}],
    }
    # The lease's end is an expression (the database's clock), compiled into the statement.
    saved = Run.objects.create(**fields, lease_until=lease_expiry())
    inserted = Run(**fields, lease_until=lease_expiry())
    insert_new(inserted)

    assert not inserted._state.adding
    assert inserted.started_at is not None  # auto_now_add, filled as save() fills it
    skip = {"id", "started_at", "lease_until"}
    columns = [f.attname for f in Run._meta.concrete_fields if f.attname not in skip]
    rows = Run.objects.filter(pk__in=[saved.pk, inserted.pk]).values("id", *columns)
    stored = {row["id"]: row for row in rows}
    assert {k: v for k, v in stored[inserted.pk].items() if k != "id"} == {
        k: v for k, v in stored[saved.pk].items() if k != "id"
    }
    assert stored[inserted.pk]["messages"] == fields["messages"]  # JSON, not a string
    # Each statement's own clock (Now() is the statement's timestamp), a lease apart.
    leases = [Run.objects.get(pk=pk).lease_until for pk in (saved.pk, inserted.pk)]
    assert abs(leases[1] - leases[0]) < timedelta(seconds=1)
    assert leases[1] - inserted.started_at > timedelta(seconds=lease_seconds() - 1)
    assert Run.objects.get(pk=inserted.pk).started_at == inserted.started_at


def test_an_equal_expression_is_compiled_once(make_agent: Any, admin_user: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    version = agent.versions.get()

    def lease(seconds: int) -> ExpressionWrapper:  # a new object each time
        return ExpressionWrapper(
            Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
        )

    _compiled.cache_clear()
    # The second 60 s lease is another object, equal to the first: not compiled again.
    for seconds, compiled in ((60, 1), (60, 0), (90, 1)):
        run = Run(agent=agent, version=version, caller=admin_user, protocol="invoke")
        run.lease_until = lease(seconds)
        before = _compiled.cache_info().misses
        insert_new(run)
        assert _compiled.cache_info().misses - before == compiled
        stored = Run.objects.get(pk=run.pk)
        # Each lease is its own length from its statement's time, whatever was compiled.
        assert abs((stored.lease_until - stored.started_at).total_seconds() - seconds) < 5


def test_a_row_of_two_models_by_prefix(make_agent: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    agents, versions = Agent._meta.db_table, AgentVersion._meta.db_table
    sql = (
        f"SELECT a.*, 7 AS seven, v.id AS v__id, v.config AS v__config, v.number AS v__number,"  # noqa: S608
        f" v.number * 10 AS v__tens FROM {agents} a"
        f" LEFT JOIN {versions} v ON v.agent_id = a.id AND v.number = %s WHERE a.id = %s"
    )
    read, version = one_row(sql, [1, agent.pk], Agent, ("v__", AgentVersion))
    assert (read.pk, read.name, read.seven) == (agent.pk, "Calculator", 7)
    assert (version.number, version.tens) == (1, 10)
    assert version.config == agent.versions.get().config
    assert not hasattr(read, "v__tens")
    assert not hasattr(version, "seven")

    read, version = one_row(sql, [2, agent.pk], Agent, ("v__", AgentVersion))
    assert read.pk == agent.pk
    assert version is None  # the outer join found no version
