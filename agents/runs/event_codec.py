"""A run's events (agents.runtime.events) as JSON and back: how the event log stores them
(agents.runs.event_log) and followers in any process read them.

One codec for the closed set, worked out from the dataclasses themselves (their fields and
annotations), so a field added to an event is stored and read back without a change here:
`{"type": "text_delta", "text": "…"}`, nested dataclasses (a usage, an intervention, a
completed turn's client calls) as objects, tuples as arrays.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from typing import Any

from agents.runtime.events import Event

EVENT_TYPES: tuple[type[Any], ...] = typing.get_args(Event)


def _type_name(cls: type[Any]) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


_BY_NAME: dict[str, type[Any]] = {_type_name(cls): cls for cls in EVENT_TYPES}
_NAME_OF: dict[type[Any], str] = {cls: name for name, cls in _BY_NAME.items()}


class UnknownEvent(ValueError):
    """A stored event this code does not know (a newer process wrote it)."""


def event_type(cls: type[Any]) -> str:
    """The `type` an event of that class is stored with."""
    return _NAME_OF[cls]


def event_json(event: Event) -> dict[str, Any]:
    """The event as a JSON object, its kind in `type`."""
    return {"type": _NAME_OF[type(event)], **_fields_json(event)}


def event_from_json(data: dict[str, Any]) -> Event:
    """The event `event_json` wrote. Raises UnknownEvent for a type it does not know."""
    cls = _BY_NAME.get(data.get("type", ""))
    if cls is None:
        raise UnknownEvent(f"unknown run event type {data.get('type')!r}")
    return typing.cast(Event, _dataclass_from(cls, data))


def _fields_json(value: Any) -> dict[str, Any]:
    return {name: _json(getattr(value, name)) for name, _ in _fields(type(value))}


def _json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_json(value)
    if isinstance(value, tuple | list):
        return [_json(item) for item in value]
    return value


def _dataclass_from(cls: type[Any], data: dict[str, Any]) -> Any:
    kwargs = {
        name: _from(hint, data[name]) for name, hint in _fields(cls) if name in data
    }  # a field this process knows and the writer did not: its default
    return cls(**kwargs)


def _from(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_from(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)  # a failure's code: its member, not the string it was stored as
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_from(item, v) for v in value)
    if origin in (typing.Union, types.UnionType):
        # X | None, or a union of JSON values (str | dict): the one dataclass if any.
        classes = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
        return _from(classes[0], value) if len(classes) == 1 else value
    return value  # JSON values: str, int, bool, dict, Literal, Any


def _fields(cls: type[Any]) -> tuple[tuple[str, Any], ...]:
    """The init fields of a dataclass with their resolved annotations."""
    known = _known.get(cls)
    if known is None:
        known = _known[cls] = _fields_of(cls)
    return known


_known: dict[type[Any], tuple[tuple[str, Any], ...]] = {}


def _fields_of(cls: type[Any]) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)  # in the globals of its own module
    return tuple(
        (f.name, hints[f.name])
        for f in dataclasses.fields(cls)
        if f.init and f.metadata.get("stored", True)  # not stored: kept elsewhere
    )
