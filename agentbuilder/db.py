"""Database work from async code without holding a connection across awaits."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connection
from django.db.models import Model
from django.db.models.sql import InsertQuery

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=Model)


def in_db(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """Run `fn` in the request's sync thread, then hand its connection back (to the pool)
    so a long stream does not keep one open while it waits on a model."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            # Inside an atomic block (a test's transaction) closing would lose the work.
            if not connection.in_atomic_block:
                connection.close()

    return sync_to_async(call, thread_sensitive=True)


def one_model(model: type[M], sql: str, params: Sequence[Any] | Mapping[str, Any]) -> M | None:
    """The first row of `sql` as a `model` instance, or None; columns that are not the
    model's become attributes of that name.

    `Model.objects.raw(sql)` for the statements the invoke path runs on every call:
    RawQuerySet reads the cursor's description and maps its columns to fields on every
    execution (a millisecond of Python a request over the path's three statements); here
    that mapping is worked out at a statement's first execution and kept, which is sound
    because `sql` is a fixed statement whose columns do not change."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        layout = _layouts.get((model, sql))
        if layout is None:
            names = [column.name for column in cursor.description]
            layout = _layouts.setdefault((model, sql), _Layout.of(model, names))
    values = [_converted(row[i], converters) for i, converters in layout.fields]
    instance = model.from_db(connection.alias, layout.attnames, values)
    for name, i in layout.extras:
        setattr(instance, name, row[i])
    return instance


Converter = tuple[Callable[..., Any], Any]


def _converted(value: Any, converters: Sequence[Converter]) -> Any:
    for convert, expression in converters:
        value = convert(value, expression, connection)
    return value


@dataclass(frozen=True)
class _Layout:
    """Where a statement's columns go: the model's fields in the model's order (with the
    converters Django applies to each, as RawQuerySet does), and the other columns."""

    attnames: list[str]
    fields: list[tuple[int, list[Converter]]]
    extras: list[tuple[str, int]]

    @classmethod
    def of(cls, model: type[Model], columns: list[str]) -> _Layout:
        position = {name: i for i, name in enumerate(columns)}
        attnames, fields = [], []
        for field in model._meta.concrete_fields:
            i = position.get(field.column or "")
            if i is None:
                continue
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            attnames.append(field.attname)
            fields.append((i, [(convert, column) for convert in found]))
        if model._meta.pk.attname not in attnames:
            raise ValueError("the statement must select the model's primary key")
        taken = {i for i, _ in fields}
        extras = [(name, i) for i, name in enumerate(columns) if i not in taken]
        return cls(attnames, fields, extras)


_layouts: dict[tuple[type[Model], str], _Layout] = {}


def insert_new(instance: Model) -> None:
    """INSERT `instance` as a new row, as `instance.save()` would on the default database,
    from a statement whose column list is written once per model.

    For rows the invoke path writes on every call (the run): `save()` decides between
    UPDATE and INSERT, walks parents, sends signals and compiles the statement, 0.7 ms of
    Python a call. Here each field still prepares its value as `save()` has it do
    (`pre_save` fills `auto_now_add`, `get_db_prep_save` adapts JSON, an expression such as
    a time in the database's clock is compiled), and nothing else: no signals are sent, so
    use it only for models without receivers or parents."""
    model = type(instance)
    into, fields = _insert_into(model)
    placeholders, values = [], []
    for field in fields:
        value = field.pre_save(instance, True)
        if hasattr(value, "resolve_expression"):
            compiler = InsertQuery(model).get_compiler(connection=connection)
            expression = value.resolve_expression(compiler.query, allow_joins=False, for_save=True)
            sql, params = compiler.compile(expression)
            placeholders.append(sql)
            values.extend(params)
        else:
            placeholders.append("%s")
            values.append(field.get_db_prep_save(value, connection))
    with connection.cursor() as cursor:
        cursor.execute(f"{into} ({', '.join(placeholders)})", values)
    instance._state.adding = False
    instance._state.db = connection.alias


@functools.cache
def _insert_into(model: type[Model]) -> tuple[str, list[Any]]:
    """`INSERT INTO table (columns) VALUES` for every concrete field, and the fields."""
    fields = list(model._meta.concrete_fields)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(field.column)) for field in fields)
    # Names from the model's metadata; every value is a parameter.
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES", fields
