"""The JSON Schemas the platform reads (agents' input and output schemas, structured-output
tools, MCP tools' input schemas): the one place that checks them and builds their validators.

A `$ref` resolves within the schema itself (`#/$defs/…`, `#/definitions/…`, `#` pointers,
anchors and subschemas with their own `$id`) or to a dialect's metaschema, which jsonschema
bundles; any other URI is refused without being opened. jsonschema's default registry
fetches what it cannot resolve with `urlopen`, http and file alike: a schema was a way to
make the server request any address behind the MCP address guard's back, and to read its
files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
import referencing
import referencing.jsonschema
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing.exceptions import NoSuchResource, Unresolvable

if TYPE_CHECKING:
    from referencing._core import Resolver  # not exported, though resolvers are public

Path = tuple[str | int, ...]

REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose values are data, not schemas: a "$ref" inside them is never followed.
DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
# Keywords whose values map names to schemas: a property may be called "enum" or "$ref".
NAMED_SCHEMAS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
SHOWN_REF = 200  # characters of a refused $ref quoted back


class SchemaRefused(ValueError):
    """A schema the platform does not use: not a valid JSON Schema, or a `$ref` that leaves
    it. `path` locates the problem inside the schema; `message` says what it is."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message

    @property
    def where(self) -> str:
        return "/".join(str(p) for p in self.path)


def _refuse(uri: str) -> referencing.Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy reads as bare


# Nothing but the metaschemas, and a retrieve that refuses: with an explicit registry,
# jsonschema no longer falls back to urlopen.
_REGISTRY: referencing.jsonschema.SchemaRegistry = METASCHEMAS.combine(
    referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs, as above
)


def check(schema: Mapping[str, Any]) -> None:
    """Raise SchemaRefused unless `schema` is a valid JSON Schema whose every `$ref`
    resolves within it."""
    cls = _validator_class(schema)
    try:
        cls.check_schema(schema)
    except RecursionError:
        raise SchemaRefused((), "nested too deeply") from None
    except jsonschema.SchemaError as exc:
        raise SchemaRefused(tuple(exc.path), exc.message) from None
    _check_refs(schema, cls)


def validator(schema: Mapping[str, Any]) -> Validator:
    """A validator for `schema` that never leaves it; raises SchemaRefused for a `$ref` that
    does (a schema read from outside, such as an MCP server's, has not been checked)."""
    cls = _validator_class(schema)
    _check_refs(schema, cls)
    return cls(schema, registry=_REGISTRY)


def errors(value: Any, schema: Mapping[str, Any]) -> list[jsonschema.ValidationError]:
    """Every violation of `schema` by `value`, in path order; raises SchemaRefused."""
    try:
        found = list(validator(schema).iter_errors(value))
    except Unresolvable as exc:  # what the walk may not foresee; still nothing was fetched
        raise SchemaRefused((), _unresolvable(str(getattr(exc, "ref", exc)))) from None
    except RecursionError:
        raise SchemaRefused((), "the schema or the value is nested too deeply") from None
    return sorted(found, key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path])


def check_refs(schema: Mapping[str, Any]) -> None:
    """Raise SchemaRefused for a `$ref` that leaves `schema` (which need not be valid)."""
    _check_refs(schema, _validator_class(schema))


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise SchemaRefused(("$schema",), "$schema must be the URI of a dialect")
    cls: type[Validator] = jsonschema.validators.validator_for(schema)
    return cls


def _check_refs(schema: Mapping[str, Any], cls: type[Validator]) -> None:
    # Resolved as jsonschema resolves them (the same specification, base URIs and registry),
    # so what passes here is what a validator finds without retrieving anything.
    specification = referencing.jsonschema.specification_with(
        dialect_id=cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect",
        default=referencing.Specification.OPAQUE,
    )
    root = _REGISTRY.resolver_with_root(specification.create_resource(schema))
    try:
        _walk(schema, (), root, specification)
    except RecursionError:
        raise SchemaRefused((), "nested too deeply") from None


def _walk(
    node: Any,
    path: Path,
    resolver: Resolver[Any],
    specification: referencing.Specification[Any],
    names: bool = False,
) -> None:
    """Check every `$ref` under `node`; `names`: node maps names to schemas."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, (*path, index), resolver, specification)
        return
    if not isinstance(node, Mapping):
        return
    if names:
        for name, subschema in node.items():
            _walk(subschema, (*path, name), resolver, specification)
        return
    if isinstance(specification.id_of(node), str):  # a subschema with its own base URI
        resolver = resolver.in_subresource(specification.create_resource(node))
    for key, value in node.items():
        if key in REF_KEYWORDS and isinstance(value, str):
            try:
                resolver.lookup(value)
            except Unresolvable:
                raise SchemaRefused((*path, key), _unresolvable(value)) from None
        elif key not in DATA_KEYWORDS:
            _walk(value, (*path, key), resolver, specification, key in NAMED_SCHEMAS)


def _unresolvable(ref: str) -> str:
    shown = ref if len(ref) <= SHOWN_REF else f"{ref[:SHOWN_REF]}…"
    return (
        f"$ref '{shown}' does not resolve within the schema: only references inside it "
        "(such as #/$defs/name) are followed, nothing is fetched"
    )
