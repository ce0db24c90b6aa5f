"""pydantic on the wire: the camelCase base model and the translation of its errors.

Every JSON body the platform accepts or returns is a pydantic model derived from
`CamelModel`, so the API, the admin and the OpenAPI schema share one definition.
"""

from __future__ import annotations

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
        loc = _data_path(tuple(err["loc"]), data)
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc = (*loc, DISCRIMINATORS[0])
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            msg = "Input should be a JSON object"
        elif err["type"] == "extra_forbidden":
            msg = f"unknown field '{loc[-1]}'" if loc else "unknown field"
        items.append(ErrorItem((*prefix, *loc), msg, str(err["type"])))
    return Invalid(items)


def _data_path(loc: tuple[str | int, ...], data: Any) -> tuple[str | int, ...]:
    """Drop the union tags pydantic adds (a discriminator's value, or a member's name such
    as "literal['latest']"), walking the input so only real keys and indexes remain."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(part, str) and _is_union_tag(node, part):
            continue
        path.append(part)
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(path)


def _is_union_tag(node: Any, part: str) -> bool:
    if isinstance(node, Mapping):
        return part not in node and any(node.get(key) == part for key in DISCRIMINATORS)
    # Nothing below a list or a scalar has a string key: it names a union member.
    return node is not None
