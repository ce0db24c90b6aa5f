"""pydantic on the wire: the camelCase base model and the translation of its errors.

Every JSON body the platform accepts or returns is a pydantic model derived from
`CamelModel`, so the API, the admin and the OpenAPI schema share one definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from agentbuilder.errors import ErrorItem, Invalid

M = TypeVar("M", bound=BaseModel)

# Keys whose value picks the branch of a tagged union. pydantic puts the tag into the error
# location ("tools", 0, "function", "funcName"); clients expect the plain data path.
DISCRIMINATORS = ("toolType", "tool_type", "type")


class CamelModel(BaseModel):
    """camelCase on the wire; snake_case accepted on input because older clients send it."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
    )


class OutputModel(BaseModel):
    """An answer body: camelCase out, never validated from client input."""

    model_config = ConfigDict(
        alias_generator=to_camel, serialize_by_alias=True, validate_by_name=True
    )


def parse(model: type[M], data: Any, *prefix: str | int) -> M:
    """Validate `data` as `model`; raise Invalid whose locations start with `prefix`.

    Validators that know a precise location raise Invalid themselves (relative to `model`).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_from(exc, data, prefix) from None
    except Invalid as exc:  # a cross-field check that located its own error
        raise exc.prefixed(*prefix) from None


def invalid_from(exc: ValidationError, data: Any, prefix: tuple[str | int, ...] = ()) -> Invalid:
    items = []
    for err in exc.errors(include_url=False):
        loc, node = _data_path(tuple(err["loc"]), data)
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc = (*loc, _discriminator_key(node, err.get("ctx") or {}))
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            msg = "Input should be a JSON object"
        elif err["type"] == "extra_forbidden":
            msg = f"unknown field '{loc[-1]}'" if loc else "unknown field"
        items.append(ErrorItem((*prefix, *loc), msg, str(err["type"])))
    return Invalid(items)


def _data_path(loc: tuple[str | int, ...], data: Any) -> tuple[tuple[str | int, ...], Any]:
    """Drop the union tags pydantic adds to a location (a discriminator's value, or a
    member's name such as "str" or "literal['latest']"), walking the input so that only
    its real keys and indexes remain. Returns the path and the input found at its end."""
    path: list[str | int] = []
    node = data
    skipped = False  # at most one tag per level: a field may share its name with the tag
    for part in loc:
        if isinstance(part, str) and not skipped and _is_union_tag(node, part):
            skipped = True
            continue
        skipped = False
        path.append(part)
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(path), node


_TYPE_NAMES = frozenset(("str", "int", "float", "bool", "dict", "list", "none", "bytes"))


def _is_union_tag(node: Any, part: str) -> bool:
    if isinstance(node, Mapping):
        if part in node:
            return False
        if any(node.get(key) == part for key in DISCRIMINATORS):
            return True
        # pydantic names union members by type: "str", "list[...]", "TextPart"
        return part in _TYPE_NAMES or "[" in part or part[:1].isupper()
    # Nothing below a list or a scalar has a string key: it names a union member.
    return node is not None


def _discriminator_key(node: Any, ctx: Mapping[str, Any]) -> str:
    """The key that picks the union member: as the input spells it, else its wire alias
    (pydantic's context reads "'tool_type' | 'toolType'": the alias comes last)."""
    if isinstance(node, Mapping):
        for key in DISCRIMINATORS:
            if key in node:
                return key
    names = re.findall(r"'([^']+)'", str(ctx.get("discriminator", "")))
    return names[-1] if names else DISCRIMINATORS[0]
