"""Domain errors raised by services and selectors; the API's exception handler renders them.

They carry no HTTP knowledge beyond the status each maps to, so a service can be called
from a view, a Celery task or the admin alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Loc = tuple[str | int, ...]


class DomainError(Exception):
    status = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.run_id: Any = None  # set when the refusal was recorded as a failed run
        # What the answer carries beside `detail` (a gate's failing cases, a spent budget),
        # camelCase.
        self.context: dict[str, Any] = {}


class NotFound(DomainError):
    status = 404


class Conflict(DomainError):
    status = 409

    def __init__(self, detail: str, **context: Any) -> None:
        super().__init__(detail)
        self.context = context


class PermissionDenied(DomainError):
    status = 403


class RateLimited(DomainError):
    """A caller over one of its rate limits: a 429, `Retry-After` the seconds until its
    window ends."""

    status = 429

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


@dataclass(frozen=True)
class ErrorItem:
    loc: Loc
    msg: str
    type: str = "value_error"

    def as_dict(self) -> dict[str, Any]:
        return {"loc": list(self.loc), "msg": self.msg, "type": self.type}


@dataclass
class Invalid(Exception):
    """A 400 with one or more located errors, e.g. Invalid.at(("body", "name"), "too long")."""

    errors: list[ErrorItem] = field(default_factory=list)
    run_id: Any = field(default=None, compare=False)  # as on DomainError

    def __post_init__(self) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, e.loc))}: {e.msg}" for e in self.errors))

    @classmethod
    def at(cls, loc: Sequence[str | int], msg: str, type: str = "value_error") -> Invalid:
        return cls([ErrorItem(tuple(loc), msg, type)])

    def prefixed(self, *prefix: str | int) -> Invalid:
        return Invalid([ErrorItem((*prefix, *e.loc), e.msg, e.type) for e in self.errors])
