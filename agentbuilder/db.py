"""Database work from async code without holding a connection across awaits (`in_db`),
and the fixed statements of the invoke path, read and written without the ORM's per-call
building (`one_row`, `insert_new`)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import psycopg
from asgiref.sync import sync_to_async
from django.db import IntegrityError, connection
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


def one_model(model: type[M], sql: str, params: Params) -> M | None:
    """The first row of `sql` as a `model` instance, or None; columns that are not the
    model's become attributes of that name."""
    found = one_row(sql, params, model)
    return None if found is None else found[0]


def one_row(sql: str, params: Params, *shapes: type[Model] | tuple[str, type[Model]]) -> Any:
    """The first row of `sql` as one instance per shape (a tuple), or None for no row.

    The first shape is a model whose fields are the columns of their own names; each
    other is `(prefix, model)`, its fields the columns named with that prefix
    (`("v__", AgentVersion)` reads `v__id`, `v__config`, …), None when its primary key
    is NULL (an outer join that found nothing). A column that is no field becomes an
    attribute of the instance whose prefix it carries, the prefix taken off.

    `Model.objects.raw(sql)` for the statements the invoke path runs on every call, a row
    of several models at once: RawQuerySet reads the cursor's description and maps its
    columns to fields on every execution (a millisecond of Python a request over the
    path's statements); here that mapping is worked out at a statement's first execution
    and kept, which is sound because `sql` is a fixed statement whose columns do not
    change."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        layouts = _layouts.get((sql, shapes))
        if layouts is None:
            names = [column.name for column in cursor.description]
            layouts = _layouts.setdefault((sql, shapes), _Layout.of_row(shapes, names))
    return tuple(layout.instance(row) for layout in layouts)


def columns_sql(model: type[Model], alias: str, prefix: str = "") -> str:
    """The select list of `model`'s columns from table alias `alias`, each named with
    `prefix` in front (for `one_row`). Named one by one rather than `alias.*`: the mapping
    `one_row` keeps is by position, and a column dropped under a running process then
    fails the statement, as it would the ORM's, instead of shifting values."""
    quote = connection.ops.quote_name
    return ", ".join(
        f"{alias}.{quote(str(field.column))}"
        + (f" AS {quote(prefix + str(field.column))}" if prefix else "")
        for field in model._meta.concrete_fields
    )


Params = Sequence[Any] | Mapping[str, Any]
Converter = tuple[Callable[..., Any], Any]


def _converted(value: Any, converters: Sequence[Converter]) -> Any:
    for convert, expression in converters:
        value = convert(value, expression, connection)
    return value


@dataclass(frozen=True)
class _Layout:
    """Where a statement's columns go for one model: its fields in the model's order (with
    the converters Django applies to each, as RawQuerySet does), and its other columns."""

    model: type[Model]
    attnames: list[str]
    fields: list[tuple[int, list[Converter]]]
    extras: list[tuple[str, int]]
    key: int  # where the primary key is in the row
    optional: bool  # an outer join's: None when its primary key is NULL

    @classmethod
    def of_row(
        cls, shapes: tuple[type[Model] | tuple[str, type[Model]], ...], columns: list[str]
    ) -> list[_Layout]:
        prefixed = [shape if isinstance(shape, tuple) else ("", shape) for shape in shapes]
        owner = {}  # column index -> (its shape's place, the column's name without prefix)
        for i, name in enumerate(columns):
            # The longest prefix a column carries names its shape; "" takes the rest.
            place, prefix = max(
                ((n, p) for n, (p, _) in enumerate(prefixed) if name.startswith(p)),
                key=lambda found: len(found[1]),
            )
            owner[i] = (place, name[len(prefix) :])
        layouts = []
        for place, (_, model) in enumerate(prefixed):
            own = {name: i for i, (p, name) in owner.items() if p == place}
            layouts.append(cls.of(model, own, optional=place > 0))
        return layouts

    @classmethod
    def of(cls, model: type[Model], columns: dict[str, int], *, optional: bool) -> _Layout:
        attnames, fields = [], []
        for field in model._meta.concrete_fields:
            i = columns.get(field.column or "")
            if i is None:
                continue
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            attnames.append(field.attname)
            fields.append((i, [(convert, column) for convert in found]))
        if model._meta.pk.attname not in attnames:
            raise ValueError(f"the statement must select {model.__name__}'s primary key")
        taken = {i for i, _ in fields}
        extras = [(name, i) for name, i in columns.items() if i not in taken]
        key = fields[attnames.index(model._meta.pk.attname)][0]
        return cls(model, attnames, fields, extras, key, optional)

    def instance(self, row: Sequence[Any]) -> Model | None:
        if self.optional and row[self.key] is None:
            return None
        values = [_converted(row[i], converters) for i, converters in self.fields]
        instance = self.model.from_db(connection.alias, self.attnames, values)
        for name, i in self.extras:
            setattr(instance, name, row[i])
        return instance


_layouts: dict[tuple[str, tuple[Any, ...]], list[_Layout]] = {}


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
    placeholders: list[str] = []
    values: list[Any] = []
    for field in fields:
        value = field.pre_save(instance, True)
        if hasattr(value, "resolve_expression"):
            sql, params = _compiled(model, value)
            placeholders.append(sql)
            values.extend(params)
        else:
            placeholders.append("%s")
            values.append(field.get_db_prep_save(value, connection))
    with connection.cursor() as cursor:
        cursor.execute(f"{into} ({', '.join(placeholders)})", values)
    instance._state.adding = False
    instance._state.db = connection.alias


@functools.lru_cache(maxsize=64)
def _compiled(model: type[Model], expression: Any) -> tuple[str, tuple[Any, ...]]:
    """An expression's SQL in an INSERT into `model`, compiled once: expressions hash by
    what they say (their class and arguments), so an equal one compiles the same."""
    compiler = InsertQuery(model).get_compiler(connection=connection)
    resolved = expression.resolve_expression(compiler.query, allow_joins=False, for_save=True)
    sql, params = compiler.compile(resolved)
    return sql, tuple(params)


@functools.cache
def _insert_into(model: type[Model]) -> tuple[str, list[Any]]:
    """`INSERT INTO table (columns) VALUES` for every concrete field, and the fields."""
    fields = list(model._meta.concrete_fields)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(field.column)) for field in fields)
    # Names from the model's metadata; every value is a parameter.
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES", fields


def unique_violation(exc: IntegrityError, constraint: str) -> bool:
    """Whether `exc` is PostgreSQL refusing a row that unique constraint `constraint` forbids
    (and not another constraint, whose refusal means something else)."""
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.UniqueViolation) and (
        cause.diag.constraint_name == constraint
    )
