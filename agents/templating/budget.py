"""What one render of a prompt template may spend, and the running account of it."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import jinja2
from django.conf import settings

T = TypeVar("T")


@dataclass(frozen=True)
class TemplateLimits:
    """Bounds on one render. Characters bound memory: any text or list the template builds,
    everything it writes (captured blocks and macro output included) and the result."""

    max_chars: int = 1_000_000
    max_steps: int = 100_000  # loop iterations plus calls
    max_seconds: float = 1.0
    max_int_bits: int = 4096  # numbers built by arithmetic; Python prints up to ~14,000 bits


def template_limits() -> TemplateLimits:
    """The limits the settings choose (TASK_TEMPLATE_MAX_*)."""
    return TemplateLimits(
        max_chars=int(settings.TASK_TEMPLATE_MAX_CHARS),
        max_steps=int(settings.TASK_TEMPLATE_MAX_STEPS),
        max_seconds=float(settings.TASK_TEMPLATE_MAX_SECONDS),
    )


class TemplateLimitError(Exception):
    """A template went over one of its limits; the message says which."""


class Budget:
    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.steps = 0
        self.written = 0
        self.deadline = time.monotonic() + limits.max_seconds
        # Weights of the containers already checked, by id (the object kept, so the id is
        # not reused): a list built from checked lists costs its own length to check.
        self.known: dict[int, tuple[Any, int]] = {}

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"rendering took longer than {self.limits.max_seconds:g} seconds"
            )

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise TemplateLimitError(
                f"the template ran more than {self.limits.max_steps} loop iterations and calls"
            )
        self.tick()

    def write(self, chars: int) -> None:
        self.written += chars
        if self.written > self.limits.max_chars:
            raise TemplateLimitError(
                f"the template wrote more than {self.limits.max_chars} characters"
            )

    def fits(self, size: int, what: str) -> None:
        if size > self.limits.max_chars:
            raise TemplateLimitError(
                f"{what} would be over {self.limits.max_chars} characters or items"
            )

    def sized(self, value: T) -> T:
        """`value`, once it is known to be within the limits of anything a template builds."""
        if isinstance(value, int) and value.bit_length() > self.limits.max_int_bits:
            raise TemplateLimitError(f"a number would be over {self.limits.max_int_bits} bits")
        if isinstance(value, list | tuple | dict):
            size = weight(value, self.limits.max_chars, self)
            self.fits(size, "a value")
            self.known[id(value)] = (value, size)
        elif not isinstance(value, str | int | float | bool | None):
            self.fits(weight(value, self.limits.max_chars, self), "a value")
        elif isinstance(value, str):
            self.fits(len(value), "a text")
        return value


def weight(value: Any, cap: int, budget: Budget | None = None) -> int:
    """Characters plus items of `value`, through nested containers (a shared one counted
    each time it appears, as printing it would write it), stopping once past `cap`."""
    total = seen = 0
    pending = [value]
    while pending:
        item = pending.pop()
        seen += 1
        if budget is not None and seen % 4096 == 0:
            budget.tick()
        known = budget.known.get(id(item)) if budget is not None else None
        if known is not None and known[0] is item:
            total += known[1]
        elif isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, Mapping):
            total += len(item)
            if total <= cap:
                pending.extend(item.keys())
                pending.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset | range):
            total += len(item)
            if total <= cap and not isinstance(item, range):
                pending.extend(item)
        elif isinstance(item, jinja2.Undefined):
            total += 1  # any attribute of a StrictUndefined raises: leave it for printing
        else:
            attrs = getattr(item, "_Namespace__attrs", None)  # jinja2's namespace()
            total += 1
            if isinstance(attrs, dict):
                pending.append(attrs)
        if total > cap:
            return total
    return total


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "template_budget", default=None
)


def current() -> Budget:
    """The budget of the render in progress (a template only runs inside `spending`)."""
    budget = _current.get()
    if budget is None:
        raise TemplateLimitError("a template ran outside of a bounded render")
    return budget


@contextmanager
def spending(limits: TemplateLimits) -> Iterator[Budget]:
    budget = Budget(limits)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
