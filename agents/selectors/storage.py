"""Reads of the database's size: the tables that grow with use, for the admin's usage page
(what RUN_RETENTION_DAYS keeps short, and what documents take)."""

from __future__ import annotations

from dataclasses import dataclass

from django.apps import apps
from django.db import connection

# (label, app, model): the largest tables, in the order the page lists them.
BIG_TABLES = (
    ("runs", "agents", "Run"),
    ("run events", "agents", "RunEvent"),
    ("webhook deliveries", "agents", "WebhookDelivery"),
    ("documents", "retrieval", "Document"),
    ("chunks", "retrieval", "Chunk"),
)


@dataclass(frozen=True)
class TableSize:
    label: str
    table: str
    bytes: int  # with its indexes and TOAST
    rows: int | None  # PostgreSQL's estimate; None before the table was first analyzed


def table_sizes() -> list[TableSize]:
    """The big tables' sizes on disk and estimated rows, read from the catalog (no scan)."""
    tables = [apps.get_model(app, model)._meta.db_table for _, app, model in BIG_TABLES]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.name, pg_total_relation_size(c.oid), c.reltuples::bigint"
            " FROM unnest(%s::text[]) AS t(name) JOIN pg_class c ON c.oid = to_regclass(t.name)",
            [tables],
        )
        found = {name: (size, rows) for name, size, rows in cursor.fetchall()}
    return [
        TableSize(label, table, found[table][0], found[table][1] if found[table][1] >= 0 else None)
        for (label, _, _), table in zip(BIG_TABLES, tables, strict=True)
        if table in found
    ]
